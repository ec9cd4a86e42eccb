// The daemon's lifecycle in VS Code: find nexusd, start it on the
// workspace with vscode-languageclient (output channel, trace, restarts),
// and stop it. Each start makes a new LanguageClient; the views hear of it
// through onWillStart (to register their handlers) and onDidStart (to fill
// themselves).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  type CloseHandlerResult,
  ErrorAction,
  type ErrorHandler,
  type ErrorHandlerResult,
  LanguageClient,
  type LanguageClientOptions,
  RevealOutputChannelOn,
  type ServerOptions,
} from 'vscode-languageclient/node';
import { classifyStderr, type DaemonState, type Fatal, findDaemon, INSTALL_HINT, RestartBudget } from './lifecycle';
import { benchMark } from './bench';
import type { InitializeResult } from './protocol';

/** How much of the daemon's stderr is kept to explain a failure. */
const STDERR_TAIL = 16 * 1024;

/** workspaceFolder is the folder the daemon serves: the first one with a
 * .nexus directory, else the first one. */
export function workspaceFolder(): vscode.WorkspaceFolder | undefined {
  const folders = vscode.workspace.workspaceFolders ?? [];
  return folders.find((f) => f.uri.scheme === 'file' && fs.existsSync(path.join(f.uri.fsPath, '.nexus'))) ?? folders[0];
}

export class Daemon implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel('Nexus');
  readonly traceOutput = vscode.window.createOutputChannel('Nexus (trace)');

  private readonly willStart = new vscode.EventEmitter<LanguageClient>();
  private readonly didStart = new vscode.EventEmitter<LanguageClient>();
  private readonly didChangeState = new vscode.EventEmitter<DaemonState>();
  /** A new client is made: register handlers on it. */
  readonly onWillStart = this.willStart.event;
  /** The client is initialized: ask it for what to show. */
  readonly onDidStart = this.didStart.event;
  readonly onDidChangeState = this.didChangeState.event;

  private client: LanguageClient | undefined;
  private stderrTail = '';
  private lastError = '';
  private initialized = false;
  private stopping = false;
  private restartTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly budget = new RestartBudget();
  private stateValue: DaemonState = 'stopped';
  info: InitializeResult | undefined;

  get state(): DaemonState {
    return this.stateValue;
  }

  /** current is the client of the running daemon, if any. */
  get current(): LanguageClient | undefined {
    return this.initialized ? this.client : undefined;
  }

  private setState(s: DaemonState): void {
    this.stateValue = s;
    this.didChangeState.fire(s);
  }

  /** start starts the daemon unless it runs. */
  async start(): Promise<void> {
    if (this.client) {
      return;
    }
    const folder = workspaceFolder();
    if (!folder) {
      this.lastError = 'Nexus needs a workspace folder.';
      this.setState('stopped');
      return;
    }
    const cfg = vscode.workspace.getConfiguration('nexus', folder);
    const bin = findDaemon(cfg.get<string>('daemonPath') || undefined);
    if (!bin) {
      const configured = cfg.get<string>('daemonPath');
      this.lastError = configured ? `nexusd not found at ${configured}. ${INSTALL_HINT}` : `nexusd is not on PATH. ${INSTALL_HINT}`;
      this.output.appendLine(this.lastError);
      this.setState('stopped');
      void vscode.window.showErrorMessage(`Nexus: ${this.lastError}`, 'Open Settings').then((pick) => {
        if (pick) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'nexus.daemonPath');
        }
      });
      return;
    }
    const args = ['--stdio', '--workspace', folder.uri.fsPath, '--log-level', cfg.get<string>('logLevel') || 'info', ...(cfg.get<string[]>('args') ?? [])];

    this.stderrTail = '';
    this.initialized = false;
    this.stopping = false;
    this.setState('starting');
    const serverOptions: ServerOptions = async () => {
      this.output.appendLine(`[nexus] starting ${bin} ${args.join(' ')}`);
      benchMark('spawn');
      const proc = spawn(bin, args, { cwd: folder.uri.fsPath, stdio: ['pipe', 'pipe', 'pipe'] });
      proc.stderr.on('data', (chunk: Buffer) => {
        this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL);
      });
      proc.on('error', (err) => {
        this.stderrTail += `\n${err.message}`;
      });
      return { process: proc, detached: false };
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [],
      workspaceFolder: folder,
      outputChannel: this.output,
      traceOutputChannel: this.traceOutput,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      errorHandler: this.errorHandler(),
      initializationFailedHandler: () => false,
      connectionOptions: { maxRestartCount: 0 },
    };
    const client = new LanguageClient('nexus', 'Nexus', serverOptions, clientOptions);
    this.client = client;
    this.willStart.fire(client);
    try {
      await client.start();
      // When nexusd exits while the client starts, vscode-languageclient 9's
      // start() may resolve instead of rejecting (it returns its _onStart,
      // which the close handler has cleared): a client not running failed.
      if (this.client === client && !client.isRunning()) {
        throw new Error('nexusd exited before it answered initialize');
      }
    } catch (err) {
      if (this.client === client) {
        this.client = undefined;
      }
      // An initialize failure is not retried: it would fail again.
      await this.failed(err instanceof Error ? err.message : String(err), { retry: false });
      return;
    }
    if (this.client !== client) {
      return; // stopped meanwhile
    }
    this.initialized = true;
    benchMark('ready');
    this.info = client.initializeResult as unknown as InitializeResult;
    this.setState('ready');
    this.didStart.fire(client);
  }

  private errorHandler(): ErrorHandler {
    return {
      error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue, handled: true }),
      closed: (): CloseHandlerResult => {
        // The connection closed: the daemon exited. Restarts are ours (a
        // new client, after a backoff), so the client never restarts.
        if (!this.stopping && this.initialized) {
          this.initialized = false;
          const client = this.client;
          this.client = undefined;
          void client?.dispose().catch(() => undefined);
          void this.failed('nexusd exited', { retry: true });
        }
        return { action: CloseAction.DoNotRestart, handled: true };
      },
    };
  }

  /** failed explains why the daemon stopped and restarts it when that may help. */
  private async failed(why: string, opts: { retry: boolean }): Promise<void> {
    // Let the last of stderr arrive.
    await new Promise((r) => setTimeout(r, 200));
    const fatal = classifyStderr(this.stderrTail);
    const lastLines = this.stderrTail.trim().split('\n').slice(-3).join('\n');
    this.lastError = fatal?.message ?? (lastLines || why);
    this.output.appendLine(`[nexus] ${why}`);
    if (fatal) {
      this.setState('stopped');
      await this.explain(fatal);
      return;
    }
    const delay = opts.retry ? this.budget.next() : undefined;
    if (delay === undefined) {
      this.setState('stopped');
      const pick = await vscode.window.showErrorMessage(`Nexus: the daemon stopped: ${this.lastError}`, 'Show log', 'Restart');
      if (pick === 'Show log') {
        this.output.show(true);
      } else if (pick === 'Restart') {
        await this.restart();
      }
      return;
    }
    this.output.appendLine(`[nexus] restarting in ${delay} ms`);
    this.setState('starting');
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.start();
    }, delay);
  }

  private async explain(f: Fatal): Promise<void> {
    if (f.kind === 'locked') {
      const pick = await vscode.window.showErrorMessage(
        `Nexus: another nexusd (pid ${f.pid}) already serves this workspace; stop it, then restart.`,
        'Show log',
        'Restart',
      );
      if (pick === 'Show log') {
        this.output.show(true);
      } else if (pick === 'Restart') {
        await this.restart();
      }
      return;
    }
    const pick = await vscode.window.showErrorMessage(`Nexus: .nexus/config.yaml is invalid: ${f.message}`, 'Open config.yaml', 'Show log');
    if (pick === 'Show log') {
      this.output.show(true);
    } else if (pick === 'Open config.yaml') {
      const folder = workspaceFolder();
      const file = f.file && path.isAbsolute(f.file) ? f.file : folder ? path.join(folder.uri.fsPath, '.nexus', 'config.yaml') : f.file;
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      const pos = new vscode.Position(Math.max(0, f.line - 1), Math.max(0, f.column - 1));
      await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos) });
    }
  }

  /** stop stops the daemon (shutdown, exit). */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.restartTimer !== undefined) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
    const client = this.client;
    this.client = undefined;
    this.initialized = false;
    if (client) {
      try {
        await client.stop(3000);
      } catch {
        // It is gone already.
      }
    }
    this.setState('stopped');
  }

  /** restart stops the daemon and starts it again, with a fresh restart budget. */
  async restart(): Promise<void> {
    await this.stop();
    this.budget.reset();
    await this.start();
  }

  get lastFailure(): string {
    return this.lastError;
  }

  dispose(): void {
    void this.stop();
    this.output.dispose();
    this.traceOutput.dispose();
    this.willStart.dispose();
    this.didStart.dispose();
    this.didChangeState.dispose();
  }
}
