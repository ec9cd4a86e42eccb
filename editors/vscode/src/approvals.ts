// Permission prompts (nexus/requestPermission), the Pending Approvals view
// of the requests not yet answered, and the Remembered Answers view of the
// daemon's "always" answers (nexus/approvals/list, revoke).

import * as vscode from 'vscode';
import type { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import {
  AnswerLabels,
  answerOf,
  type Pending,
  PendingApprovals,
  promptDetail,
  promptMessage,
  rememberedDescription,
  rememberedLabel,
} from './approvalsModel';
import type { Daemon } from './daemon';
import { type Approval, call, isMethodNotFound, Methods, type PermissionAnswer, type PermissionParams, Requests } from './protocol';

export class ApprovalsView implements vscode.TreeDataProvider<Pending>, vscode.Disposable {
  readonly pending = new PendingApprovals();
  private readonly changed = new vscode.EventEmitter<Pending | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly pendingChanged = new vscode.EventEmitter<void>();
  /** A request was added, answered or cancelled (the chat's inline answers). */
  readonly onDidChangePending = this.pendingChanged.event;
  private readonly view: vscode.TreeView<Pending>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    daemon: Daemon,
    private readonly remembered: RememberedView,
  ) {
    this.view = vscode.window.createTreeView('nexus.approvals', { treeDataProvider: this });
    this.disposables.push(
      this.view,
      this.pending.onDidChange(() => {
        this.changed.fire(undefined);
        this.pendingChanged.fire();
        const n = this.pending.size;
        this.view.badge = n > 0 ? { value: n, tooltip: `${n} tool ${n === 1 ? 'call waits' : 'calls wait'} for your approval` } : undefined;
      }),
      daemon.onWillStart((c) => this.attach(c)),
      daemon.onDidChangeState((s) => {
        if (s !== 'ready') {
          this.pending.clear(); // the daemon that asked is gone
        }
      }),
      vscode.commands.registerCommand('nexus.answerApproval', (p?: Pending) => this.answer(p)),
    );
  }

  private attach(client: LanguageClient): void {
    client.onRequest(Requests.requestPermission, (params: PermissionParams, token: CancellationToken) => this.ask(params, token));
  }

  /** ask shows the prompt and lists the request until it is answered, here
   * or from the view, or the daemon cancels it. */
  private async ask(params: PermissionParams, token: CancellationToken): Promise<PermissionAnswer> {
    const { pending, answer } = this.pending.add(params);
    const sub = token.onCancellationRequested(() => this.pending.cancel(pending.id));
    void vscode.window
      .showWarningMessage(promptMessage(params), { modal: false, detail: promptDetail(params) }, ...AnswerLabels.map((a) => a.label))
      .then((pick) => {
        const a = answerOf(pick);
        if (a) {
          this.pending.answer(pending.id, a);
        }
      });
    const a = await answer;
    sub.dispose();
    if (a === 'allow_always' || a === 'reject_always') {
      // The daemon remembers it: show it once the call goes on.
      setTimeout(() => void this.remembered.reload(), 500);
    }
    // Cancelled: the daemon no longer reads the answer.
    return a ?? 'reject_once';
  }

  private async answer(p?: Pending): Promise<void> {
    let target: Pending | undefined = p ?? this.view.selection[0];
    if (!target) {
      const items = this.pending.list().map((x) => ({ label: x.params.toolCall.toolName, description: x.params.icerc.intent, x }));
      if (items.length === 0) {
        void vscode.window.showInformationMessage('Nexus: no approval is waiting.');
        return;
      }
      target = (await vscode.window.showQuickPick(items, { placeHolder: 'Which request?' }))?.x;
      if (!target) {
        return;
      }
    }
    if (!this.pending.has(target.id)) {
      void vscode.window.showInformationMessage('Nexus: that request is no longer waiting.');
      return;
    }
    const pick = await vscode.window.showQuickPick(
      AnswerLabels.map((a) => a.label),
      { placeHolder: promptMessage(target.params) },
    );
    const a = answerOf(pick);
    if (a && !this.pending.answer(target.id, a)) {
      void vscode.window.showInformationMessage('Nexus: that request is no longer waiting.');
    }
  }

  /** waiting lists the requests not yet answered, oldest first. */
  waiting(): Pending[] {
    return this.pending.list();
  }

  /** answerToolCall answers the request of a tool call, as the prompt's
   * buttons do; false when none waits for it. */
  answerToolCall(toolCallId: string, a: PermissionAnswer): boolean {
    return this.pending.answerToolCall(toolCallId, a);
  }

  getChildren(p?: Pending): Pending[] {
    return p ? [] : this.pending.list();
  }

  getTreeItem(p: Pending): vscode.TreeItem {
    const item = new vscode.TreeItem(p.params.toolCall.toolName, vscode.TreeItemCollapsibleState.None);
    item.id = `approval:${p.id}`;
    item.description = p.params.icerc.intent || p.params.toolCall.icerc?.intent || '';
    item.tooltip = `${promptMessage(p.params)}\n\n${promptDetail(p.params)}`;
    item.iconPath = new vscode.ThemeIcon('bell');
    item.contextValue = 'approval';
    item.command = { command: 'nexus.answerApproval', title: 'Answer', arguments: [p] };
    return item;
  }

  dispose(): void {
    this.pending.clear();
    this.changed.dispose();
    this.pendingChanged.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

/** RememberedView lists the daemon's remembered "always" answers. */
export class RememberedView implements vscode.TreeDataProvider<Approval>, vscode.Disposable {
  private approvals: Approval[] = [];
  private readonly changed = new vscode.EventEmitter<Approval | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<Approval>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly daemon: Daemon) {
    this.view = vscode.window.createTreeView('nexus.remembered', { treeDataProvider: this });
    this.disposables.push(
      this.view,
      daemon.onDidStart(() => void this.reload()),
      vscode.commands.registerCommand('nexus.revokeApproval', (a?: Approval) => this.revoke(a)),
      vscode.commands.registerCommand('nexus.refreshRemembered', () => this.reload()),
    );
  }

  async reload(): Promise<void> {
    const client = this.daemon.current;
    if (!client) {
      return;
    }
    try {
      const r = await call(client, Methods.approvalsList, {});
      this.approvals = r.approvals ?? [];
      this.view.message = this.approvals.length === 0 ? 'No remembered answers.' : undefined;
    } catch (err) {
      this.approvals = [];
      this.view.message = isMethodNotFound(err)
        ? 'This nexusd cannot list remembered answers (nexus/approvals/list); use `nexus perm ls` in a terminal.'
        : `Could not list remembered answers: ${err instanceof Error ? err.message : String(err)}`;
    }
    this.changed.fire(undefined);
  }

  private async revoke(a?: Approval): Promise<void> {
    const target = a ?? this.view.selection[0];
    const client = this.daemon.current;
    if (!target || !client) {
      return;
    }
    try {
      const r = await call(client, Methods.approvalsRevoke, { appId: target.appId, toolName: target.toolName, serverName: target.serverName });
      if (!r.revoked) {
        void vscode.window.showInformationMessage(`Nexus: ${rememberedLabel(target)} was not remembered any more.`);
      }
    } catch (err) {
      void vscode.window.showErrorMessage(
        isMethodNotFound(err)
          ? 'Nexus: this nexusd cannot revoke remembered answers (nexus/approvals/revoke).'
          : `Nexus: revoke failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    await this.reload();
  }

  getChildren(a?: Approval): Approval[] {
    return a ? [] : this.approvals;
  }

  getTreeItem(a: Approval): vscode.TreeItem {
    const item = new vscode.TreeItem(rememberedLabel(a), vscode.TreeItemCollapsibleState.None);
    item.description = rememberedDescription(a);
    item.tooltip = `${a.decision} since ${a.time}${a.definitionHash ? `\ndefinition ${a.definitionHash}` : ''}`;
    item.iconPath = new vscode.ThemeIcon(a.decision === 'allow' ? 'pass' : 'circle-slash');
    item.contextValue = 'remembered';
    return item;
  }

  dispose(): void {
    this.changed.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
