// A real nexusd --stdio for the tests, over vscode-jsonrpc as the extension
// speaks to it (vscode-languageclient is vscode-jsonrpc underneath): no mock.

import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createMessageConnection, type MessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node.js';
import type { InitializeResult } from '../src/protocol';

export const DEADLINE_MS = 10_000;

export function nexusdPath(): string {
  const bin = process.env.NEXUSD;
  if (!bin) {
    throw new Error('NEXUSD is not set: run the tests with scripts/extension-tests.sh');
  }
  return bin;
}

/** makeWorkspace is a fresh workspace with .nexus/config.yaml. */
export function makeWorkspace(config = ''): string {
  const ws = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-ext-')));
  fs.mkdirSync(path.join(ws, '.nexus'));
  fs.writeFileSync(path.join(ws, '.nexus', 'config.yaml'), config);
  return ws;
}

/** run starts nexusd with args and returns its exit and stderr (for start failures). */
export function run(args: string[]): { proc: ChildProcess; done: Promise<{ code: number | null; stderr: string }> } {
  const proc = spawn(nexusdPath(), args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr?.setEncoding('utf8');
  proc.stderr?.on('data', (c: string) => {
    stderr += c;
  });
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) => proc.on('exit', (code) => resolve({ code, stderr })));
  return { proc, done };
}

export class Daemon {
  readonly conn: MessageConnection;
  readonly proc: ChildProcess;
  private readonly exited: Promise<unknown>;

  constructor(readonly workspace: string) {
    const { proc, done } = run(['--stdio', '--workspace', workspace, '--log-level', 'debug']);
    this.proc = proc;
    this.exited = done;
    proc.stdin?.on('error', () => undefined);
    this.conn = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
    this.conn.onError(() => undefined);
  }

  /** initialize listens and initializes (handlers must be registered first). */
  async initialize(): Promise<InitializeResult> {
    this.conn.listen();
    const r = await this.conn.sendRequest<InitializeResult>('initialize', {
      processId: process.pid,
      clientInfo: { name: 'nexus-extension-tests' },
      workspaceFolders: [{ uri: `file://${this.workspace}`, name: 'ws' }],
      capabilities: {},
    });
    await this.conn.sendNotification('initialized', {});
    return r;
  }

  async close(): Promise<void> {
    try {
      await this.conn.sendRequest('shutdown');
      await this.conn.sendNotification('exit');
    } catch {
      this.proc.kill();
    }
    await this.exited;
    this.conn.dispose();
    fs.rmSync(this.workspace, { recursive: true, force: true });
  }
}

/** waitFor polls cond until it holds, failing after the deadline. */
export async function waitFor(what: string, cond: () => boolean): Promise<void> {
  const end = Date.now() + DEADLINE_MS;
  while (!cond()) {
    if (Date.now() > end) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
