// The status bar item (daemon state, running calls, waiting approvals) and
// the quick pick of Nexus commands it opens.

import * as vscode from 'vscode';
import type { ActivityView } from './activity';
import type { ApprovalsView } from './approvals';
import type { Daemon } from './daemon';
import { statusText } from './lifecycle';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem('nexus.status', vscode.StatusBarAlignment.Left, 10);
  private readonly disposables: vscode.Disposable[] = [];
  private running = 0;

  constructor(
    private readonly daemon: Daemon,
    activity: ActivityView,
    private readonly approvals: ApprovalsView,
  ) {
    this.item.name = 'Nexus';
    this.item.command = 'nexus.quickPick';
    this.disposables.push(
      this.item,
      daemon.onDidChangeState(() => this.render()),
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
    const state = this.daemon.state;
    const waiting = this.approvals.pending.size;
    this.item.text = statusText(state, this.running, waiting);
    this.item.backgroundColor =
      state === 'stopped'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : waiting > 0
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    const info = this.daemon.info?.nexus;
    this.item.tooltip =
      state === 'stopped'
        ? `Nexus daemon stopped${this.daemon.lastFailure ? `: ${this.daemon.lastFailure}` : ''}`
        : `nexusd ${info?.version ?? ''} on ${info?.workspace ?? ''}`.trim();
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
