// Activation and wiring only: the daemons, the views, the status bar and the
// commands that are not a view's own.

import path from 'node:path';
import * as vscode from 'vscode';
import { ActivityView } from './activity';
import { ApprovalsView, RememberedView } from './approvals';
import { ChangesView } from './changes';
import { ChatView } from './chat';
import { ConfigSupport } from './config';
import { ElicitationView } from './elicitation';
import { benchInit, benchMark } from './bench';
import { daemonId, Daemons } from './daemon';
import { type Bundle, findBundle } from './lifecycle';
import { DefinitionsView, McpView } from './workspaceViews';
import { StatusBar } from './status';
import { completeStep } from './walkthrough';

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const t0 = Date.now();
  benchInit();
  benchMark('activate', t0);
  // A platform VSIX carries nexusd and nexus in bin/: the daemon runs from
  // there unless nexus.daemonPath names another, and terminals find nexus.
  const bundle = findBundle(context.extensionPath);
  terminalPath(context.environmentVariableCollection, bundle);
  for (const p of bundle?.fixed ?? []) {
    // In the Extension Host log: the VSIX was unpacked without file modes.
    console.warn(`Nexus: ${p} was not executable; its mode is now 0755`);
  }
  const daemons = new Daemons(bundle?.nexusd);
  const activity = new ActivityView(daemons);
  const remembered = new RememberedView(daemons);
  const elicitation = new ElicitationView(context.extensionUri, daemons);
  const approvals = new ApprovalsView(daemons, remembered, elicitation.questions);
  context.subscriptions.push(
    daemons,
    activity,
    remembered,
    elicitation,
    approvals,
    new StatusBar(daemons, activity, approvals),
    new ChangesView(daemons),
    new DefinitionsView(daemons),
    new McpView(daemons),
    new ChatView(context.extensionUri, daemons, approvals),
    new ConfigSupport(context.asAbsolutePath('schemas/nexus-config.schema.json')),
    vscode.commands.registerCommand('nexus.focusChat', () => vscode.commands.executeCommand('nexus.chat.focus')),
    // The walkthrough's first step is done once a daemon is ready.
    daemons.onDidChangeState(() => {
      const ready = daemons.list().some((d) => d.state === 'ready');
      void vscode.commands.executeCommand('setContext', 'nexus.daemonReady', ready);
      if (ready) {
        completeStep('install');
      }
    }),
    vscode.commands.registerCommand('nexus.restartDaemon', () => daemons.restart()),
    vscode.commands.registerCommand('nexus.showLog', async () => (await daemons.pick('Show the log of which folder?'))?.output.show(true)),
    vscode.commands.registerCommand('nexus.serveFolder', () => serveFolder(daemons)),
    vscode.workspace.onDidChangeConfiguration((e) => {
      const changed = daemons
        .list()
        .filter((d) => ['nexus.daemonPath', 'nexus.args', 'nexus.logLevel'].some((k) => e.affectsConfiguration(k, d.folder)));
      if (changed.length > 0) {
        void vscode.window.showInformationMessage('Nexus: the daemon settings changed.', 'Restart Daemon').then((pick) => {
          if (pick) {
            void Promise.all(changed.map((d) => d.restart()));
          }
        });
      }
    }),
  );
  await daemons.sync();
}

/** terminalPath puts the bundled nexus first on the PATH of the integrated
 * terminals, or takes back what an earlier install put there when there is
 * no bundle (VS Code keeps a collection across sessions). */
function terminalPath(env: vscode.GlobalEnvironmentVariableCollection, bundle: Bundle | undefined): void {
  env.clear();
  if (!bundle) {
    return;
  }
  env.description = `Puts the nexus command that comes with the Nexus extension (${bundle.dir}) first on PATH.`;
  env.prepend('PATH', bundle.dir + path.delimiter);
}

/** serveFolder starts Nexus in a workspace folder that has no daemon yet
 * (nexusd makes its .nexus directory). */
async function serveFolder(daemons: Daemons): Promise<void> {
  const served = new Set(daemons.list().map((d) => d.id));
  const free = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file' && !served.has(daemonId(f)));
  if (free.length === 0) {
    void vscode.window.showInformationMessage('Nexus: every workspace folder has its daemon already.');
    return;
  }
  const pick = await vscode.window.showQuickPick(
    free.map((f) => ({ label: f.name, detail: f.uri.fsPath, f })),
    { placeHolder: 'Start Nexus in which folder? (its .nexus directory is made)' },
  );
  if (pick) {
    await daemons.serve(pick.f);
  }
}

export function deactivate(): void {
  // The daemons are stopped by disposing context.subscriptions.
}
