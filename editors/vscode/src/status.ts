// The status bar item (daemon state, running calls, waiting approvals) and
// the quick pick of Nexus commands it opens.

import * as vscode from 'vscode';
import type { ActivityView } from './activity';
import type { ApprovalsView } from './approvals';
import type { Daemons } from './daemon';
import { overallState, statusText } from './lifecycle';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('nexus.status', vscode.StatusBarAlignment.Left, 10);
  private readonly disposables: vscode.Disposable[] = [];
  private running = 0;

  constructor(
    private readonly daemons: Daemons,
    activity: ActivityView,
    private readonly approvals: ApprovalsView,
  ) {
    this.item.name = 'Nexus';
    this.item.command = 'nexus.quickPick';
    this.disposables.push(
      this.item,
      daemons.onDidChangeState(() => this.render()),
      daemons.onDidChangeDaemons(() => this.render()),
      activity.onDidChangeRunning((n) => {
        this.running = n;
        this.render();
      }),
      approvals.pending.onDidChange(() => this.render()),
      vscode.commands.registerCommand('nexus.quickPick', () => this.quickPick()),
    );
    this.render();
    this.item.show();
  }

  private render(): void {
    const all = this.daemons.list();
    const state = overallState(all.map((d) => d.state));
    const stopped = all.filter((d) => d.state === 'stopped').length;
    const waiting = this.approvals.pending.size;
    this.item.text = statusText(state, this.running, waiting, stopped);
    this.item.backgroundColor =
      state === 'stopped'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : waiting > 0 || stopped > 0
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    const line = (d: (typeof all)[number]) => {
      if (d.state === 'stopped') {
        return `Nexus daemon stopped${d.lastFailure ? `: ${d.lastFailure}` : ''}`;
      }
      const info = d.info?.nexus;
      return d.state === 'starting' ? `nexusd starting on ${d.folder.uri.fsPath}` : `nexusd ${info?.version ?? ''} on ${info?.workspace ?? ''}`.trim();
    };
    this.item.tooltip =
      all.length === 0
        ? 'Nexus: no workspace folder is served'
        : all.length === 1
          ? line(all[0])
          : all.map((d) => `${d.name}: ${line(d)}`).join('\n');
  }

  private async quickPick(): Promise<void> {
    const items: (vscode.QuickPickItem & { command?: string })[] = [];
    if (this.approvals.pending.size > 0) {
      items.push({ label: '$(bell) Answer a pending approval', command: 'nexus.answerApproval' });
    }
    items.push(
      { label: '$(list-tree) Show Tool Activity', command: 'nexus.activity.focus' },
      { label: '$(filter) Filter Tool Activity', command: 'nexus.filterActivity' },
      { label: '$(debug-stop) Cancel a running call', command: 'nexus.cancelCall' },
      { label: '$(json) Show call details', command: 'nexus.showCallDetails' },
      { label: '$(diff) Diff definition revisions', command: 'nexus.diffRevisions' },
      { label: '$(output) Show log', command: 'nexus.showLog' },
      { label: '$(debug-restart) Restart daemon', command: 'nexus.restartDaemon' },
    );
    const local = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file');
    if (local.length > this.daemons.list().length) {
      items.push({ label: '$(root-folder) Start Nexus in another folder', command: 'nexus.serveFolder' });
    }
    const pick = await vscode.window.showQuickPick(items, { placeHolder: 'Nexus' });
    if (pick?.command) {
      await vscode.commands.executeCommand(pick.command);
    }
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
