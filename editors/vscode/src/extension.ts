// Activation and wiring only: the daemon, the views, the status bar and the
// commands that are not a view's own.

import * as vscode from 'vscode';
import { ActivityView } from './activity';
import { ApprovalsView, RememberedView } from './approvals';
import { ChatView } from './chat';
import { benchInit, benchMark } from './bench';
import { Daemon } from './daemon';
import { DefinitionsView, McpView } from './workspaceViews';
import { StatusBar } from './status';
import { completeStep } from './walkthrough';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const t0 = Date.now();
  benchInit();
  benchMark('activate', t0);
  const daemon = new Daemon();
  const activity = new ActivityView(daemon);
  const remembered = new RememberedView(daemon);
  const approvals = new ApprovalsView(daemon, remembered);
  context.subscriptions.push(
    daemon,
    activity,
    remembered,
    approvals,
    new StatusBar(daemon, activity, approvals),
    new DefinitionsView(daemon),
    new McpView(daemon),
    new ChatView(context.extensionUri, daemon, approvals),
    vscode.commands.registerCommand('nexus.focusChat', () => vscode.commands.executeCommand('nexus.chat.focus')),
    // The walkthrough's first step is done once the daemon is ready.
    daemon.onDidChangeState((s) => {
      void vscode.commands.executeCommand('setContext', 'nexus.daemonReady', s === 'ready');
      if (s === 'ready') {
        completeStep('install');
      }
    }),
    vscode.commands.registerCommand('nexus.restartDaemon', () => daemon.restart()),
    vscode.commands.registerCommand('nexus.showLog', () => daemon.output.show(true)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('nexus.daemonPath') || e.affectsConfiguration('nexus.args') || e.affectsConfiguration('nexus.logLevel')) {
        void vscode.window.showInformationMessage('Nexus: the daemon settings changed.', 'Restart Daemon').then((pick) => {
          if (pick) {
            void daemon.restart();
          }
        });
      }
    }),
  );
  await daemon.start();
}

export function deactivate(): void {
  // The daemon is stopped by disposing context.subscriptions.
}
