// Permission prompts (nexus/requestPermission), the Pending Approvals view
// of the requests not yet answered (and of MCP servers' questions, which
// elicitation.ts asks), and the Remembered Answers view of the daemon's
// "always" answers (nexus/approvals/list, revoke).

import * as vscode from 'vscode';
import type { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import {
  AnswerLabels,
  answerOf,
  type Pending,
  PendingApprovals,
  promptDetail,
  promptMessage,
  promptPick,
  rememberedDescription,
  rememberedLabel,
  rememberedTooltip,
} from './approvalsModel';
import type { Daemon, Daemons } from './daemon';
import { type Question, questionText, questionTitle, type Questions } from './elicitationModel';
import { folderItem, type FolderNode, forget, inFolder, roots } from './folders';
import { inertLine, noLinks } from './inert';
import { type Approval, call, isMethodNotFound, Methods, type PermissionAnswer, type PermissionParams, Requests } from './protocol';
import { diffTitle, parseProposed, PROPOSED_SCHEME, proposedContent, proposedPath, reviewable } from './reviewModel';

/** A row of Pending Approvals: a permission request, or an MCP server's question. */
type Waiting = Pending | Question;

const isQuestion = (w: Waiting): w is Question => 'server' in w.params;

export class ApprovalsView implements vscode.TreeDataProvider<Waiting>, vscode.Disposable {
  readonly pending = new PendingApprovals();
  private readonly changed = new vscode.EventEmitter<Waiting | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly pendingChanged = new vscode.EventEmitter<void>();
  /** A request was added, answered or cancelled (the chat's inline answers). */
  readonly onDidChangePending = this.pendingChanged.event;
  private readonly view: vscode.TreeView<Waiting>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly daemons: Daemons,
    private readonly remembered: RememberedView,
    private readonly questions?: Questions,
  ) {
    this.view = vscode.window.createTreeView('nexus.approvals', { treeDataProvider: this });
    const changed = () => {
      this.changed.fire(undefined);
      const n = this.pending.size;
      const q = this.questions?.size ?? 0;
      const parts = [n > 0 ? `${n} tool ${n === 1 ? 'call waits' : 'calls wait'} for your approval` : '', q > 0 ? `${q} ${q === 1 ? 'question waits' : 'questions wait'} for your answer` : ''];
      this.view.badge = n + q > 0 ? { value: n + q, tooltip: parts.filter(Boolean).join('; ') } : undefined;
    };
    this.disposables.push(
      this.view,
      this.pending.onDidChange(() => {
        changed();
        this.pendingChanged.fire();
      }),
      ...(questions ? [questions.onDidChange(changed)] : []),
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidChangeState((d) => {
        if (d.state !== 'ready') {
          this.pending.clear(d.id); // the daemon that asked is gone
        }
      }),
      vscode.commands.registerCommand('nexus.answerApproval', (p?: Waiting) =>
        p && isQuestion(p) ? vscode.commands.executeCommand('nexus.openQuestion', p.id) : this.answer(p ?? this.selectedPending())),
      // The two sides of a proposed change, read-only, for the diff editor.
      vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, {
        provideTextDocumentContent: (uri) => {
          const ref = parseProposed(uri.path);
          const p = ref && this.pending.list().find((x) => x.id === ref.id);
          return proposedContent(p?.params.icerc.changes?.[ref?.index ?? -1], ref?.side ?? 'after');
        },
      }),
      vscode.commands.registerCommand('nexus.acceptProposed', (uri?: vscode.Uri) => this.answerProposed(uri, 'allow_once')),
      vscode.commands.registerCommand('nexus.rejectProposed', (uri?: vscode.Uri) => this.answerProposed(uri, 'reject_once')),
    );
  }

  /** openDiffs opens VS Code's diff editor on each file a question's call
   * would change (icerc.changes, computed by nexusd): the file now on the
   * left (empty when there is none), as it would be on the right, with
   * Accept and Reject in the editor's title. A file with no text to show
   * (binary, or over 1 MiB on both sides) gets no diff editor: the prompt
   * and Pending Approvals say what it is. */
  private async openDiffs(p: Pending, options: { preserveFocus: boolean }): Promise<void> {
    const changes = p.params.icerc.changes ?? [];
    for (const [index, c] of changes.entries()) {
      if (!reviewable(c) || !this.pending.has(p.id)) {
        continue;
      }
      const side = (s: 'before' | 'after') => vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: proposedPath({ id: p.id, index, side: s }, c.path) });
      await vscode.commands.executeCommand('vscode.diff', side('before'), side('after'), diffTitle(p.params, c), {
        preview: false,
        preserveFocus: options.preserveFocus,
      });
    }
  }

  /** openDiffOf opens the diff editor of the question waiting for a tool
   * call (the chat card's "Open diff"); false when none waits. */
  async openDiffOf(toolCallId: string): Promise<boolean> {
    const p = this.pending.byToolCall(toolCallId);
    if (!p) {
      return false;
    }
    await this.openDiffs(p, { preserveFocus: false });
    return true;
  }

  /** closeDiffs closes the diff editors of a question once it is answered
   * or withdrawn. */
  private async closeDiffs(id: number): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.scheme === PROPOSED_SCHEME && parseProposed(t.input.modified.path)?.id === id);
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs, true);
    }
  }

  /** answerProposed is Accept (allow_once) or Reject (reject_once) in a
   * proposed change's diff editor: it answers that change's question. */
  private answerProposed(uri: vscode.Uri | undefined, a: PermissionAnswer): void {
    const input = vscode.window.tabGroups.activeTabGroup.activeTab?.input;
    const target = uri ?? (input instanceof vscode.TabInputTextDiff ? input.modified : undefined);
    const ref = target?.scheme === PROPOSED_SCHEME ? parseProposed(target.path) : undefined;
    if (!ref || !this.pending.answer(ref.id, a)) {
      void vscode.window.showInformationMessage('Nexus: that change is no longer waiting for an answer.');
    }
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onRequest(Requests.requestPermission, (params: PermissionParams, token: CancellationToken) => this.ask(d, params, token));
  }

  /** message is a request's prompt line, naming the folder when several are served. */
  private message(p: Pending): string {
    const d = p.source ? this.daemons.get(p.source) : undefined;
    const text = promptMessage(p.params);
    return d ? inFolder(this.daemons, d, text) : text;
  }

  /** ask shows the prompt and lists the request until it is answered, here
   * or from the view, or the daemon cancels it. */
  private async ask(d: Daemon, params: PermissionParams, token: CancellationToken): Promise<PermissionAnswer> {
    const { pending, answer } = this.pending.add(params, new Date(), d.id);
    const sub = token.onCancellationRequested(() => this.pending.cancel(pending.id));
    // The proposed change beside the prompt: whichever answers first wins.
    void this.openDiffs(pending, { preserveFocus: true });
    void vscode.window
      .showWarningMessage(this.message(pending), { modal: false, detail: promptDetail(params) }, ...AnswerLabels.map((a) => a.label))
      .then((pick) => {
        const a = answerOf(pick);
        if (a) {
          this.pending.answer(pending.id, a);
        }
      });
    const a = await answer;
    sub.dispose();
    void this.closeDiffs(pending.id);
    if (a === 'allow_always' || a === 'reject_always') {
      // The daemon remembers it: show it once the call goes on.
      setTimeout(() => void this.remembered.reload(d), 500);
    }
    // Cancelled: the daemon no longer reads the answer.
    return a ?? 'reject_once';
  }

  private selectedPending(): Pending | undefined {
    const s = this.view.selection[0];
    return s && !isQuestion(s) ? s : undefined;
  }

  private async answer(p?: Pending): Promise<void> {
    let target: Pending | undefined = p;
    if (!target) {
      const items = this.pending.list().map((x) => ({
        ...promptPick(x.params),
        detail: this.daemons.multi ? this.daemons.get(x.source ?? '')?.name : undefined,
        x,
      }));
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
      { placeHolder: this.message(target) },
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

  getChildren(p?: Waiting): Waiting[] {
    return p ? [] : [...this.pending.list(), ...(this.questions?.list() ?? [])];
  }

  getTreeItem(p: Waiting): vscode.TreeItem {
    if (isQuestion(p)) {
      return this.questionItem(p);
    }
    const { label, description } = promptPick(p.params);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.None);
    item.id = `approval:${p.id}`;
    const folder = this.daemons.multi ? this.daemons.get(p.source ?? '')?.name : undefined;
    item.description = folder ? `${folder} · ${description}` : description;
    item.tooltip = `${this.message(p)}\n\n${promptDetail(p.params)}`;
    item.iconPath = new vscode.ThemeIcon('bell');
    item.contextValue = 'approval';
    item.command = { command: 'nexus.answerApproval', title: 'Answer', arguments: [p] };
    return item;
  }

  /** questionItem is an MCP server's question: what the server wrote (its
   * name, message and address) is shown inert. */
  private questionItem(q: Question): vscode.TreeItem {
    const item = new vscode.TreeItem(`${inertLine(q.params.server)} asks`, vscode.TreeItemCollapsibleState.None);
    item.id = `question:${q.id}`;
    const folder = this.daemons.multi ? this.daemons.get(q.source ?? '')?.name : undefined;
    const { message } = questionText(q.params);
    item.description = folder ? `${folder} · ${inertLine(q.params.message)}` : inertLine(q.params.message);
    item.tooltip = `${questionTitle(q.params)}\n\n${message}${q.params.mode === 'url' ? `\n\n${inertLine(q.params.url)}` : ''}`;
    item.iconPath = new vscode.ThemeIcon('comment-discussion');
    item.contextValue = 'question';
    item.command = { command: 'nexus.openQuestion', title: 'Answer', arguments: [q.id] };
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

type RememberedNode = FolderNode | { kind: 'approval'; daemon: Daemon; approval: Approval };

/** RememberedView lists the daemons' remembered "always" answers. */
export class RememberedView implements vscode.TreeDataProvider<RememberedNode>, vscode.Disposable {
  /** The answers of each daemon, by daemon id; a string is why there are none. */
  private readonly approvals = new Map<string, Approval[] | string>();
  private readonly changed = new vscode.EventEmitter<RememberedNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly view: vscode.TreeView<RememberedNode>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly daemons: Daemons) {
    this.view = vscode.window.createTreeView('nexus.remembered', { treeDataProvider: this });
    this.disposables.push(
      this.view,
      daemons.onDidStart(({ daemon }) => void this.reload(daemon)),
      daemons.onDidChangeDaemons(() => this.render()),
      vscode.commands.registerCommand('nexus.revokeApproval', (n?: RememberedNode) => this.revoke(n)),
      vscode.commands.registerCommand('nexus.refreshRemembered', () => Promise.all(this.daemons.list().map((d) => this.reload(d)))),
    );
  }

  /** reload asks a daemon for its remembered answers. */
  async reload(d: Daemon): Promise<void> {
    const client = d.current;
    if (!client) {
      return;
    }
    try {
      const r = await call(client, Methods.approvalsList, {});
      this.approvals.set(d.id, r.approvals ?? []);
    } catch (err) {
      this.approvals.set(
        d.id,
        isMethodNotFound(err)
          ? 'This nexusd cannot list remembered answers (nexus/approvals/list); use `nexus perm ls` in a terminal.'
          : `Could not list remembered answers: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    this.render();
  }

  private render(): void {
    forget(this.approvals, this.daemons);
    const live = this.daemons.list();
    const lists = live.map((d) => this.approvals.get(d.id));
    const why = lists.find((l) => typeof l === 'string');
    const none = lists.every((l) => Array.isArray(l) && l.length === 0);
    // With several folders, each folder's node says it instead.
    this.view.message = this.daemons.multi ? undefined : typeof why === 'string' ? why : none && lists.length > 0 ? 'No remembered answers.' : undefined;
    this.changed.fire(undefined);
  }

  private of(d: Daemon): RememberedNode[] {
    const l = this.approvals.get(d.id);
    return Array.isArray(l) ? l.map((approval) => ({ kind: 'approval', daemon: d, approval })) : [];
  }

  private async revoke(n?: RememberedNode): Promise<void> {
    const target = n ?? this.view.selection[0];
    if (target?.kind !== 'approval') {
      return;
    }
    const client = target.daemon.current;
    if (!client) {
      return;
    }
    const a = target.approval;
    try {
      const r = await call(client, Methods.approvalsRevoke, { appId: a.appId, toolName: a.toolName, serverName: a.serverName });
      if (!r.revoked) {
        void vscode.window.showInformationMessage(`Nexus: ${noLinks(rememberedLabel(a))} was not remembered any more.`);
      }
    } catch (err) {
      void vscode.window.showErrorMessage(
        isMethodNotFound(err)
          ? 'Nexus: this nexusd cannot revoke remembered answers (nexus/approvals/revoke).'
          : `Nexus: revoke failed: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    await this.reload(target.daemon);
  }

  getChildren(n?: RememberedNode): RememberedNode[] {
    if (!n) {
      return roots(this.daemons, (d) => this.of(d)) as RememberedNode[];
    }
    return n.kind === 'folder' ? this.of(n.daemon) : [];
  }

  getTreeItem(n: RememberedNode): vscode.TreeItem {
    if (n.kind === 'folder') {
      const l = this.approvals.get(n.daemon.id);
      return folderItem('remembered', n, typeof l === 'string' ? l : `${l?.length ?? 0}`);
    }
    const a = n.approval;
    const item = new vscode.TreeItem(rememberedLabel(a), vscode.TreeItemCollapsibleState.None);
    item.description = rememberedDescription(a);
    item.tooltip = rememberedTooltip(a);
    item.iconPath = new vscode.ThemeIcon(a.broad ? 'warning' : a.decision === 'allow' ? 'pass' : 'circle-slash');
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
