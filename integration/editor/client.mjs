// A fake editor for the protocol tests: it spawns the real nexusd --stdio on
// a fresh workspace, talks to it over vscode-jsonrpc as a VS Code extension
// would, records every notification and permission prompt, and waits on
// conditions with a deadline (never a fixed sleep), like gopls'
// test/integration/fake editor.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  ProgressType,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
  Trace,
} from 'vscode-jsonrpc/node.js';

import { Requests } from './protocol.mjs';

export { CancellationTokenSource, ResponseError } from 'vscode-jsonrpc/node.js';
// The names of the protocol, from the extension's protocol module
// (editors/vscode/src/protocol.ts, built into protocol.mjs).
export { Methods, Notifications, Requests } from './protocol.mjs';

/** How long a condition may take before the test fails; generous, since a
 * deadline is a failure bound, not a measurement. */
export const DEADLINE_MS = 10_000;

/** How many protocol trace lines a failing test prints. */
const TRACE_LINES = 40;

/** The path of the nexusd binary under test, from $NEXUSD. */
export function nexusdPath() {
  const bin = process.env.NEXUSD;
  if (!bin) {
    throw new Error('NEXUSD is not set: run the tests with scripts/editor-tests.sh');
  }
  fs.accessSync(bin, fs.constants.X_OK); // a clear error rather than a spawn failure
  return bin;
}

/** makeWorkspace creates a temporary workspace, with .nexus/config.yaml when
 * config is given. */
export function makeWorkspace(config) {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-editor-')));
  if (config !== undefined) {
    fs.mkdirSync(path.join(ws, '.nexus'), { recursive: true });
    fs.writeFileSync(path.join(ws, '.nexus', 'config.yaml'), config);
  }
  return ws;
}

/** The daemons started and not yet closed, for [closeAll]. */
const live = new Set();

/** closeAll closes every editor still open: a test that timed out leaves
 * its daemon behind, which would keep the test process alive. */
export async function closeAll() {
  await Promise.all([...live].map((ed) => ed.close()));
}

/** Editor is one nexusd --stdio process and the connection to it. */
export class Editor {
  /** start spawns nexusd on workspace (a new one unless given) and listens;
   * it does not initialize. */
  static start({ workspace, config } = {}) {
    return new Editor(workspace ?? makeWorkspace(config), workspace === undefined);
  }

  constructor(workspace, ownWorkspace) {
    this.workspace = workspace;
    this.ownWorkspace = ownWorkspace;
    /** Every notification received, in order: {method, params}. */
    this.notes = [];
    /** Every nexus/requestPermission received, in order (its params). */
    this.prompts = [];
    /** permission answers a prompt; the default rejects. */
    this.permission = () => 'reject_once';
    this.stderr = '';
    /** The protocol trace, one line a message, as vscode-jsonrpc writes it. */
    this.trace = [];
    this.waiters = new Set();

    this.proc = spawn(nexusdPath(), ['--stdio', '--workspace', workspace, '--log-level', 'debug'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    live.add(this);
    this.proc.stderr.setEncoding('utf8');
    this.proc.stderr.on('data', (chunk) => { this.stderr += chunk; });
    // A write to a daemon that has exited is reported by the connection.
    this.proc.stdin.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.exitStatus = { code, signal };
        this.check();
        resolve({ code, signal });
      });
    });

    this.conn = createMessageConnection(
      new StreamMessageReader(this.proc.stdout),
      new StreamMessageWriter(this.proc.stdin),
    );
    this.conn.onNotification((method, params) => this.record(method, params));
    this.conn.onUnhandledProgress((params) => this.record('$/progress', params));
    this.conn.onRequest(Requests.requestPermission, async (params) => {
      this.prompts.push(params);
      this.check();
      return this.permission(params);
    });
    this.conn.onError(() => {}); // the daemon going away is what some tests want
    this.conn.trace(Trace.Compact, {
      log: (msg, data) => {
        const line = data === undefined ? msg : `${msg} ${data.replace(/\s+/g, ' ').trim()}`;
        this.trace.push(`${new Date().toISOString()} ${line}`);
      },
    });
    this.conn.listen();
  }

  record(method, params) {
    this.notes.push({ method, params });
    this.check();
  }

  /** request sends a request; token, when given, is a CancellationToken. */
  request(method, params, token) {
    // Absent params are left out: vscode-jsonrpc would send [null].
    const args = params === undefined ? [] : [params];
    if (token !== undefined) {
      args.push(token);
    }
    return this.conn.sendRequest(method, ...args);
  }

  notify(method, params) {
    return params === undefined ? this.conn.sendNotification(method) : this.conn.sendNotification(method, params);
  }

  /** initialize runs initialize and initialized and returns the result. */
  async initialize(extra = {}) {
    const result = await this.request('initialize', {
      processId: process.pid,
      clientInfo: { name: 'nexus-editor-tests', version: '0' },
      rootUri: pathToFileURL(this.workspace).href,
      workspaceFolders: [{ uri: pathToFileURL(this.workspace).href, name: path.basename(this.workspace) }],
      capabilities: { window: { workDoneProgress: true } },
      ...extra,
    });
    await this.notify('initialized', {});
    this.initResult = result;
    return result;
  }

  /** progress listens to $/progress of token (as an extension does with
   * connection.onProgress); the values are recorded as notifications. */
  progress(token) {
    return this.conn.onProgress(new ProgressType(), token, (value) => this.record('$/progress', { token, value }));
  }

  /** notifications returns the recorded params of method that match. */
  notifications(method, match = () => true) {
    return this.notes.filter((n) => n.method === method && match(n.params)).map((n) => n.params);
  }

  /** waitFor resolves with the first truthy value of cond(), evaluated now
   * and after every notification, prompt, and the daemon's exit; it
   * rejects after timeout ms, naming what it waited for. */
  waitFor(what, cond, timeout = DEADLINE_MS) {
    return new Promise((resolve, reject) => {
      const w = { cond, resolve, reject };
      w.timer = setTimeout(() => {
        this.waiters.delete(w);
        const recent = this.notes.slice(-10).map((n) => `  ${n.method} ${JSON.stringify(n.params)}`).join('\n');
        reject(new Error(`waited ${timeout}ms for ${what}; the last notifications:\n${recent || '  (none)'}`));
      }, timeout);
      this.waiters.add(w);
      this.checkOne(w);
    });
  }

  /** waitForNote waits for a notification of method whose params match. */
  waitForNote(method, match = () => true, timeout = DEADLINE_MS) {
    return this.waitFor(`a ${method} notification matching ${match}`,
      () => this.notes.find((n) => n.method === method && match(n.params))?.params, timeout);
  }

  check() {
    for (const w of this.waiters) {
      this.checkOne(w);
    }
  }

  checkOne(w) {
    let v;
    try {
      v = w.cond();
    } catch (err) {
      v = undefined;
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.reject(err);
      return;
    }
    if (v) {
      this.waiters.delete(w);
      clearTimeout(w.timer);
      w.resolve(v);
    }
  }

  /** waitExit waits for the process to exit and returns {code, signal}. */
  waitExit(timeout = DEADLINE_MS) {
    return this.waitFor('nexusd to exit', () => this.exitStatus, timeout);
  }

  /** shutdown runs shutdown and exit and returns how the process exited. */
  async shutdown() {
    await this.request('shutdown');
    await this.notify('exit');
    return this.waitExit();
  }

  /** close ends the daemon if it still runs (SIGTERM, then SIGKILL) and
   * removes the workspace it made. */
  async close() {
    live.delete(this);
    for (const w of this.waiters) {
      clearTimeout(w.timer);
    }
    this.waiters.clear();
    if (this.exitStatus === undefined) {
      this.proc.kill('SIGTERM');
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5_000);
      await this.exited;
      clearTimeout(t);
    }
    this.conn.dispose();
    if (this.ownWorkspace) {
      fs.rmSync(this.workspace, { recursive: true, force: true });
    }
  }
}

/** withEditor runs fn with a started editor and closes it after; when fn
 * fails, the daemon's log (its stderr) goes to the test's output. */
export async function withEditor(t, opts, fn) {
  const ed = Editor.start(opts);
  try {
    return await fn(ed);
  } catch (err) {
    const trace = ed.trace.slice(-TRACE_LINES).map((l) => (l.length > 400 ? `${l.slice(0, 400)}…` : l));
    process.stderr.write(`--- nexusd log (stderr) of "${t.name}", workspace ${ed.workspace} ---\n${ed.stderr}`
      + `--- the last ${trace.length} of ${ed.trace.length} protocol messages ---\n${trace.join('\n')}\n--- end ---\n`);
    throw err;
  } finally {
    await ed.close();
  }
}

/** rpcError awaits promise, which must reject with a JSON-RPC error, and
 * returns that error. */
export async function rpcError(promise) {
  try {
    const v = await promise;
    throw new Error(`expected a JSON-RPC error, got the result ${JSON.stringify(v)}`);
  } catch (err) {
    if (!(err instanceof ResponseError)) {
      throw err;
    }
    return err;
  }
}

/** eventually polls cond (for what only the file system shows) until it is
 * truthy or timeout ms pass. */
export async function eventually(what, cond, timeout = DEADLINE_MS) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await cond();
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      throw new Error(`waited ${timeout}ms for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
