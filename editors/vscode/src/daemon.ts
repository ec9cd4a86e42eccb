// The daemons' lifecycle in VS Code: one nexusd per workspace folder that
// has a .nexus directory (else the first folder), each started with
// vscode-languageclient (output channel, trace, restarts) and stopped when
// its folder leaves the workspace. Each start makes a new LanguageClient;
// the views hear of it through Daemons.onWillStart (to register their
// handlers) and onDidStart (to fill themselves), with the daemon it is for.

import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
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
import { classifyStderr, type DaemonState, type Fatal, findDaemon, notFoundMessage, RestartBudget, servedFolders } from './lifecycle';
import { benchMark } from './bench';
import { mcpLogLine } from './logs';
import { type InitializeResult, type LogEntry, Notifications } from './protocol';

/** How much of the daemon's stderr is kept to explain a failure. */
const STDERR_TAIL = 16 * 1024;

/** daemonId names a folder's daemon in URIs and tree ids: stable for the
 * folder, safe in a URI authority. */
export function daemonId(folder: vscode.WorkspaceFolder): string {
  return crypto.createHash('sha256').update(folder.uri.toString()).digest('hex').slice(0, 12);
}

/** NexusClient is a LanguageClient that leaves the explaining of a failed
 * start to the Daemon (the lock's pid, the config's line): its own "couldn't
 * create connection to server" notification goes to the output channel only. */
class NexusClient extends LanguageClient {
  override error(message: string, data?: unknown, showNotification?: boolean | 'force'): void {
    super.error(message, data, message.includes("couldn't create connection to server") ? false : showNotification);
  }
}

/** One nexusd, serving one workspace folder. */
export class Daemon implements vscode.Disposable {
  readonly id: string;
  readonly output: vscode.OutputChannel;
  readonly traceOutput: vscode.OutputChannel;

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

  /** first: the daemon's channels are "Nexus" and "Nexus (trace)"; others
   * name their folder. bundled: the nexusd the extension carries, if any. */
  constructor(
    readonly folder: vscode.WorkspaceFolder,
    first: boolean,
    private readonly multi: () => boolean = () => false,
    private readonly bundled?: string,
  ) {
    this.id = daemonId(folder);
    this.output = vscode.window.createOutputChannel(first ? 'Nexus' : `Nexus (${folder.name})`);
    this.traceOutput = vscode.window.createOutputChannel(first ? 'Nexus (trace)' : `Nexus (trace, ${folder.name})`);
  }

  /** name is the folder's name, as views and messages show it. */
  get name(): string {
    return this.folder.name;
  }

  /** say begins a message with the folder's name when several are served. */
  private say(text: string): string {
    return this.multi() ? `[${this.name}] ${text}` : text;
  }

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
    const folder = this.folder;
    const cfg = vscode.workspace.getConfiguration('nexus', folder);
    const found = findDaemon({ configured: cfg.get<string>('daemonPath') || undefined, bundled: this.bundled });
    if (found.path === undefined) {
      this.lastError = notFoundMessage(found.tried);
      this.output.appendLine(this.lastError);
      this.setState('stopped');
      void vscode.window.showErrorMessage(`Nexus: ${this.lastError}`, 'Open Settings').then((pick) => {
        if (pick) {
          void vscode.commands.executeCommand('workbench.action.openSettings', 'nexus.daemonPath');
        }
      });
      return;
    }
    const bin = found.path;
    const args = ['--stdio', '--workspace', folder.uri.fsPath, '--log-level', cfg.get<string>('logLevel') || 'info', ...(cfg.get<string[]>('args') ?? [])];

    this.stderrTail = '';
    this.initialized = false;
    this.stopping = false;
    this.setState('starting');
    const serverOptions: ServerOptions = async () => {
      this.output.appendLine(`[nexus] starting ${bin} ${args.join(' ')}`);
      this.output.appendLine(`[nexus] nexusd from ${found.source === 'bundled' ? 'the extension' : found.source}`);
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
    const client = new NexusClient('nexus', `Nexus (${folder.name})`, serverOptions, clientOptions);
    this.client = client;
    // MCP servers' log messages, in the daemon's output channel.
    client.onNotification(Notifications.log, (e: LogEntry) => {
      const line = mcpLogLine(e);
      if (line !== undefined) {
        this.output.appendLine(line);
      }
    });
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
      const pick = await vscode.window.showErrorMessage(this.say(`Nexus: the daemon stopped: ${this.lastError}`), 'Show log', 'Restart');
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
        this.say(`Nexus: another nexusd (pid ${f.pid}) already serves this workspace; stop it, then restart.`),
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
    const pick = await vscode.window.showErrorMessage(this.say(`Nexus: .nexus/config.yaml is invalid: ${f.message}`), 'Open config.yaml', 'Show log');
    if (pick === 'Show log') {
      this.output.show(true);
    } else if (pick === 'Open config.yaml') {
      const file = f.file && path.isAbsolute(f.file) ? f.file : path.join(this.folder.uri.fsPath, '.nexus', 'config.yaml');
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

/** A daemon and its new client. */
export interface Started {
  daemon: Daemon;
  client: LanguageClient;
}

/** Daemons are the daemons of the workspace, one per served folder, in the
 * folders' order. Views listen here, not on a Daemon: the events name the
 * daemon they are for. */
export class Daemons implements vscode.Disposable {
  private readonly byId = new Map<string, { daemon: Daemon; subs: vscode.Disposable[] }>();
  private readonly willStart = new vscode.EventEmitter<Started>();
  private readonly didStart = new vscode.EventEmitter<Started>();
  private readonly didChangeState = new vscode.EventEmitter<Daemon>();
  private readonly didChange = new vscode.EventEmitter<void>();
  private readonly disposables: vscode.Disposable[] = [];
  readonly onWillStart = this.willStart.event;
  readonly onDidStart = this.didStart.event;
  /** A daemon's state changed. */
  readonly onDidChangeState = this.didChangeState.event;
  /** A daemon was added or removed (a folder came or went). */
  readonly onDidChangeDaemons = this.didChange.event;

  /** bundled: the nexusd the extension carries, run unless
   * nexus.daemonPath names another. */
  constructor(private readonly bundled?: string) {
    this.disposables.push(vscode.workspace.onDidChangeWorkspaceFolders(() => void this.sync()));
  }

  /** list is the daemons in the order of their folders. */
  list(): Daemon[] {
    const order = (vscode.workspace.workspaceFolders ?? []).map((f) => daemonId(f));
    return [...this.byId.values()].map((e) => e.daemon).sort((a, b) => order.indexOf(a.id) - order.indexOf(b.id));
  }

  /** multi tells whether more than one folder is served: the views then
   * show a node per folder. */
  get multi(): boolean {
    return this.byId.size > 1;
  }

  get(id: string): Daemon | undefined {
    return this.byId.get(id)?.daemon;
  }

  /** only is the daemon when there is exactly one. */
  get only(): Daemon | undefined {
    return this.byId.size === 1 ? this.list()[0] : undefined;
  }

  /** sync starts a daemon for each served folder without one and stops
   * those whose folder left the workspace or is no longer served. */
  async sync(): Promise<void> {
    const want = servedFolders(vscode.workspace.workspaceFolders ?? []);
    const wantIds = new Set(want.map((f) => daemonId(f)));
    const stopping: Promise<void>[] = [];
    for (const [id, e] of this.byId) {
      if (!wantIds.has(id)) {
        this.byId.delete(id);
        stopping.push(this.remove(e));
      }
    }
    const added: Daemon[] = [];
    for (const f of want) {
      if (!this.byId.has(daemonId(f))) {
        added.push(this.add(f));
      }
    }
    if (added.length > 0 || stopping.length > 0) {
      this.didChange.fire();
    }
    await Promise.all([...stopping, ...added.map((d) => d.start())]);
  }

  /** serve starts a daemon for a folder that has none (nexusd makes its
   * .nexus directory). */
  async serve(folder: vscode.WorkspaceFolder): Promise<Daemon> {
    const known = this.get(daemonId(folder));
    if (known) {
      return known;
    }
    const d = this.add(folder);
    this.didChange.fire();
    await d.start();
    return d;
  }

  private add(folder: vscode.WorkspaceFolder): Daemon {
    const d = new Daemon(folder, this.byId.size === 0, () => this.multi, this.bundled);
    const subs = [
      d.onWillStart((client) => this.willStart.fire({ daemon: d, client })),
      d.onDidStart((client) => this.didStart.fire({ daemon: d, client })),
      d.onDidChangeState(() => this.didChangeState.fire(d)),
    ];
    this.byId.set(d.id, { daemon: d, subs });
    return d;
  }

  private async remove(e: { daemon: Daemon; subs: vscode.Disposable[] }): Promise<void> {
    await e.daemon.stop();
    for (const s of e.subs) {
      s.dispose();
    }
    e.daemon.dispose();
  }

  /** pick is the daemon a command acts on: the only one, or the one the
   * person picks among the folders. */
  async pick(placeHolder = 'Which workspace folder?'): Promise<Daemon | undefined> {
    const all = this.list();
    if (all.length <= 1) {
      return all[0];
    }
    const pick = await vscode.window.showQuickPick(
      all.map((d) => ({ label: d.name, description: d.state, detail: d.folder.uri.fsPath, d })),
      { placeHolder },
    );
    return pick?.d;
  }

  /** restart restarts one daemon (picked when there are several), or all
   * of them. */
  async restart(d?: Daemon): Promise<void> {
    if (d) {
      return d.restart();
    }
    const all = this.list();
    if (all.length === 0) {
      return this.sync();
    }
    if (all.length === 1) {
      return all[0].restart();
    }
    const pick = await vscode.window.showQuickPick(
      [{ label: 'All folders', d: undefined as Daemon | undefined }, ...all.map((x) => ({ label: x.name, description: x.state, d: x as Daemon | undefined }))],
      { placeHolder: 'Restart the daemon of which folder?' },
    );
    if (!pick) {
      return;
    }
    await Promise.all((pick.d ? [pick.d] : all).map((x) => x.restart()));
  }

  dispose(): void {
    for (const e of this.byId.values()) {
      for (const s of e.subs) {
        s.dispose();
      }
      e.daemon.dispose();
    }
    this.byId.clear();
    for (const d of this.disposables) {
      d.dispose();
    }
    this.willStart.dispose();
    this.didStart.dispose();
    this.didChangeState.dispose();
    this.didChange.dispose();
  }
}
