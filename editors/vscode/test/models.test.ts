// The protocol module and the view models against the real nexusd --stdio.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { CancellationToken } from 'vscode-jsonrpc/node.js';
import { ActivityModel, Coalescer, describe, groupOf, icon, shownStatus } from '../src/activityModel';
import { answerOf, PendingApprovals, promptMessage, rememberedDescription, rememberedLabel, rememberedTooltip } from '../src/approvalsModel';
import { classifyStderr, overallState, RestartBudget, servedFolders, statusText } from '../src/lifecycle';
import { mcpLogLine } from '../src/logs';
import { hookText, launchText } from '../src/mcpModel';
import {
  call,
  isMethodNotFound,
  Methods,
  Notifications,
  type PermissionAnswer,
  type PermissionParams,
  Requests,
  type ToolCall,
} from '../src/protocol';
import { Daemon, makeWorkspace, run, waitFor } from './nexusd';

const timeout = 30_000;

test('protocol: every method and notification the daemon announces is in protocol.ts', { timeout }, async () => {
  const d = new Daemon(makeWorkspace());
  try {
    const init = await d.initialize();
    const methods = new Set<string>(Object.values(Methods));
    for (const m of init.capabilities.nexus.methods) {
      assert.ok(methods.has(m), `protocol.ts Methods lacks ${m}`);
    }
    const notes = new Set<string>(Object.values(Notifications));
    for (const n of init.capabilities.nexus.notifications) {
      assert.ok(notes.has(n), `protocol.ts Notifications lacks ${n}`);
    }
    assert.equal(init.capabilities.nexus.requestPermission, true);
    assert.ok(init.nexus.workspace, JSON.stringify(init.nexus));
    // A method the daemon does not have is MethodNotFound, as the views expect.
    const err = await call(d.conn, Methods.approvalsList, {}).then(
      () => undefined,
      (e: unknown) => e,
    );
    if (err !== undefined) {
      assert.ok(isMethodNotFound(err), String(err));
    }
  } finally {
    await d.close();
  }
});

test('activity: the model follows notifications and replies, groups by author, cancels', { timeout }, async () => {
  const d = new Daemon(makeWorkspace());
  const model = new ActivityModel(3);
  let fired = 0;
  const tick = new Coalescer(() => fired++, 50);
  d.conn.onNotification(Notifications.toolCall, (c: ToolCall) => {
    model.update(c);
    tick.poke();
  });
  try {
    await d.initialize();
    const now = await call(d.conn, Methods.toolsExecute, { toolName: 'get_current_time', arguments: {} });
    model.reply(now);
    assert.equal(now.success, true, JSON.stringify(now));
    await waitFor('the call in the model', () => model.get(now.toolCallId)?.status === 'completed');
    const c = model.get(now.toolCallId)!;
    assert.equal(c.author, 'editor');
    assert.deepEqual(groupOf(c), { key: 'editor', label: 'Editor' });
    assert.match(describe(c), /^completed · editor · \d+(\.\d)? m?s$/);
    assert.equal(icon(c.status), 'check');

    // A long call runs, shows as running, and is cancelled from the model's id.
    const sleeping = call(d.conn, Methods.toolsExecute, { toolName: 'execute_command', arguments: { command: 'sleep 30' } });
    await waitFor('a running call', () => model.running() === 1);
    const id = model.view()[0].calls.find((x) => x.status === 'running')!.toolCallId;
    const cancelled = await call(d.conn, Methods.toolCallsCancel, { toolCallId: id });
    assert.equal(cancelled.cancelled, true);
    const r = await sleeping;
    model.reply(r);
    assert.equal(r.success, false);
    await waitFor('the cancelled call to end', () => model.running() === 0);
    assert.equal(model.get(id)?.status, 'error');

    // Bounded groups: 3 kept, the rest counted as older.
    for (let i = 0; i < 3; i++) {
      model.reply(await call(d.conn, Methods.toolsExecute, { toolName: 'get_current_time', arguments: {} }));
    }
    await waitFor('the calls to end', () => model.running() === 0 && model.view()[0].older >= 2);
    assert.equal(model.view()[0].calls.length, 3);

    // The list the view starts from agrees with what the notifications said.
    const listed = await call(d.conn, Methods.toolCallsList, { limit: 500 });
    const fresh = new ActivityModel();
    fresh.reset(listed.toolCalls);
    assert.equal(fresh.get(id)?.status, 'error');
    assert.equal(fresh.view()[0].calls.length, 5);
    // Filters on status and text.
    fresh.setFilter({ status: 'error' });
    assert.deepEqual(fresh.view()[0].calls.map((x) => x.toolCallId), [id]);
    fresh.setFilter({ text: 'CURRENT_TIME' });
    assert.equal(fresh.view()[0].calls.length, 4);

    // Stale updates do not take a finished call back.
    assert.equal(fresh.update({ ...fresh.get(id)!, status: 'running' }), false);
    assert.equal(fresh.get(id)?.status, 'error');
    // The refreshes were coalesced: fewer than the notifications.
    await new Promise((res) => setTimeout(res, 100));
    assert.ok(fired > 0);
  } finally {
    tick.dispose();
    await d.close();
  }
});

const askWrites = 'tools:\n  policy:\n    write_file: ask\n';

test('approvals: a prompt is listed, answered from the list, and dropped when the daemon cancels it', { timeout }, async () => {
  const d = new Daemon(makeWorkspace(askWrites));
  const pending = new PendingApprovals();
  let changes = 0;
  pending.onDidChange(() => changes++);
  d.conn.onRequest(Requests.requestPermission, async (params: PermissionParams, token: CancellationToken) => {
    const { pending: p, answer } = pending.add(params);
    token.onCancellationRequested(() => pending.cancel(p.id));
    return (await answer) ?? 'reject_once';
  });
  try {
    await d.initialize();
    const write = call(d.conn, Methods.toolsExecute, {
      toolName: 'write_file',
      arguments: { path: 'a.txt', content: 'yes' },
      intent: 'save the answer',
    });
    await waitFor('the prompt', () => pending.size === 1);
    const [p] = pending.list();
    assert.equal(p.params.toolCall.toolName, 'write_file');
    assert.equal(p.params.toolCall.author, 'editor');
    assert.equal(p.params.icerc.intent, 'save the answer');
    assert.match(promptMessage(p.params), /^Nexus: .+ asks to run write_file: write_file a\.txt \(3 bytes\) — "Always" .+\. In the caller's words: "save the answer"$/);
    assert.equal(statusText('ready', 1, pending.size), '$(bell) Nexus: 1 approval');
    const allowOnce: PermissionAnswer = answerOf('Allow once')!;
    assert.equal(pending.answer(p.id, allowOnce), true);
    const r = await write;
    assert.equal(r.success, true, JSON.stringify(r));
    assert.equal(pending.size, 0);

    // Cancelled while it waits: the daemon sends $/cancelRequest and the
    // request leaves the list unanswered.
    const second = call(d.conn, Methods.toolsExecute, { toolName: 'write_file', arguments: { path: 'b.txt', content: 'no' } });
    await waitFor('the second prompt', () => pending.size === 1);
    const id = pending.list()[0].params.toolCall.toolCallId;
    await call(d.conn, Methods.toolCallsCancel, { toolCallId: id });
    await waitFor('the cancelled prompt to leave', () => pending.size === 0);
    const r2 = await second;
    assert.equal(r2.success, false);
    assert.ok(changes >= 4, `changes ${changes}`);
  } finally {
    await d.close();
  }
});

test('lifecycle: an invalid config and a locked workspace are recognised from stderr', { timeout }, async () => {
  const bad = makeWorkspace('definitions:\n  bogus_key: 1\n');
  const r = await run(['--stdio', '--workspace', bad]).done;
  assert.notEqual(r.code, 0);
  const fatal = classifyStderr(r.stderr);
  assert.equal(fatal?.kind, 'config', r.stderr);
  if (fatal?.kind === 'config') {
    assert.equal(fatal.line, 2, r.stderr);
    assert.ok(fatal.file.endsWith('.nexus/config.yaml'), fatal.file);
  }

  const d = new Daemon(makeWorkspace());
  try {
    await d.initialize();
    const second = await run(['--stdio', '--workspace', d.workspace]).done;
    const locked = classifyStderr(second.stderr);
    assert.equal(locked?.kind, 'locked', second.stderr);
    if (locked?.kind === 'locked') {
      assert.equal(locked.pid, String(d.proc.pid));
    }
  } finally {
    await d.close();
  }
  assert.equal(classifyStderr('panic: something else'), undefined);
});

test('approvals: a remembered answer shows its names inert', () => {
  const a = { appId: 'al\u202epha', toolName: 'x\x1b[2K', serverName: 'srv\r', decision: 'allow', definitionHash: 'h\x07', time: 't', covers: 'x "a\u2066b"' } as const;
  assert.equal(rememberedLabel(a), 'srv\\r/x\\x1b[2K');
  assert.equal(rememberedDescription(a), 'always allow · app:al\\u202epha');
  assert.equal(rememberedTooltip(a), 'Always allow: x "a\\u2066b"\nFor app "al\\u202epha" and its agent sessions, since t\nDefinition h\\x07');
});

test('lifecycle: restart budget and status text', () => {
  const b = new RestartBudget(5, 180_000, 100);
  const t0 = 1_000_000;
  assert.deepEqual([0, 1, 2, 3, 4].map((i) => b.next(t0 + i)), [100, 200, 400, 800, 1600]);
  assert.equal(b.next(t0 + 10), undefined);
  // Once the oldest restart is out of the window, one more may go.
  assert.equal(b.next(t0 + 180_000), 1600);
  assert.equal(b.next(t0 + 180_000), undefined);
  assert.equal(statusText('ready', 0, 0), '$(check) Nexus');
  assert.equal(statusText('ready', 2, 0), '$(sync~spin) Nexus: 2 running');
  assert.equal(statusText('ready', 2, 3), '$(bell) Nexus: 3 approvals');
  assert.equal(statusText('stopped', 2, 3), '$(error) Nexus: stopped');
});

test('logs: an MCP server\'s log message is one output line; other entries are left to window/logMessage', () => {
  const time = '2026-01-01T00:00:00Z';
  assert.equal(
    mcpLogLine({ source: 'mcp', server: 'github', level: 'warning', logger: 'http', message: 'rate limited', data: 'rate limited', time }),
    '[mcp:github] warning (http): rate limited',
  );
  assert.equal(mcpLogLine({ source: 'mcp', server: 'db', level: 'error', message: '{"code":7}', data: { code: 7 }, time }), '[mcp:db] error: {"code":7}');
  assert.equal(mcpLogLine({ source: 'nexusd', level: 'warn', message: 'x', time }), undefined);
});

test('multi-root: the served folders, one state for several daemons, and each daemon\'s requests apart', { timeout }, async () => {
  const a = makeWorkspace(askWrites);
  const b = makeWorkspace(askWrites);
  const plain = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-ext-plain-')));
  const folder = (p: string, scheme = 'file') => ({ name: path.basename(p), uri: { scheme, fsPath: p } });
  // Each local folder with a .nexus; none: the first local folder.
  assert.deepEqual(servedFolders([folder(plain), folder(a), folder('/remote', 'vscode-remote'), folder(b)]).map((f) => f.uri.fsPath), [a, b]);
  assert.deepEqual(servedFolders([folder('/remote', 'vscode-remote'), folder(plain)]).map((f) => f.uri.fsPath), [plain]);
  assert.deepEqual(servedFolders([]), []);

  assert.equal(overallState([]), 'stopped');
  assert.equal(overallState(['stopped', 'stopped']), 'stopped');
  assert.equal(overallState(['ready', 'starting']), 'starting');
  assert.equal(overallState(['ready', 'stopped']), 'ready');
  assert.equal(statusText(overallState(['ready', 'stopped']), 0, 0, 1), '$(warning) Nexus: 1 stopped');
  assert.equal(statusText('ready', 0, 2, 1), '$(bell) Nexus: 2 approvals');

  // Two real daemons ask at once; the one that goes away takes only its
  // own request with it.
  const da = new Daemon(a);
  const db = new Daemon(b);
  const pending = new PendingApprovals();
  for (const [d, source] of [
    [da, 'A'],
    [db, 'B'],
  ] as const) {
    d.conn.onRequest(Requests.requestPermission, async (params: PermissionParams, token: CancellationToken) => {
      const { pending: p, answer } = pending.add(params, new Date(), source);
      token.onCancellationRequested(() => pending.cancel(p.id));
      return (await answer) ?? 'reject_once';
    });
  }
  try {
    await Promise.all([da.initialize(), db.initialize()]);
    const wa = call(da.conn, Methods.toolsExecute, { toolName: 'write_file', arguments: { path: 'a.txt', content: 'a' } });
    const wb = call(db.conn, Methods.toolsExecute, { toolName: 'write_file', arguments: { path: 'b.txt', content: 'b' } });
    await waitFor('both prompts', () => pending.size === 2);
    assert.deepEqual(pending.list().map((p) => p.source).sort(), ['A', 'B']);
    pending.clear('A'); // A's daemon stopped: its request is dropped unanswered
    assert.deepEqual(pending.list().map((p) => p.source), ['B']);
    assert.equal((await wa).success, false);
    assert.equal(pending.answer(pending.list()[0].id, 'allow_once'), true);
    const rb = await wb;
    assert.equal(rb.success, true, JSON.stringify(rb));
    assert.equal(fs.readFileSync(path.join(b, 'b.txt'), 'utf8'), 'b');
    assert.equal(fs.existsSync(path.join(a, 'a.txt')), false);
  } finally {
    await Promise.all([da.close(), db.close()]);
  }
});

test('activity: a cancelled or denied call reads so, with a slashed icon; the filter takes either word', () => {
  const base = { toolCallId: 'x', toolName: 'write_file', startedAt: '2026-11-25T00:00:00Z', endedAt: '2026-11-25T00:00:01Z' } as ToolCall;
  const cancelled = { ...base, status: 'error', error: { code: 'cancelled', message: 'the call was cancelled' } } as ToolCall;
  const denied = { ...base, toolCallId: 'y', status: 'error', error: { code: 'permission_denied', message: 'rejected' } } as ToolCall;
  const failed = { ...base, toolCallId: 'z', status: 'error', error: { code: 'execution_failed', message: 'boom' } } as ToolCall;
  assert.deepEqual([cancelled, denied, failed].map(shownStatus), ['cancelled', 'denied', 'error']);
  assert.deepEqual([cancelled, denied, failed].map((c) => icon(shownStatus(c))), ['circle-slash', 'circle-slash', 'error']);
  assert.match(describe(cancelled), /^cancelled · /);
  const m = new ActivityModel();
  m.reset([cancelled, denied, failed]);
  m.setFilter({ status: 'cancelled' });
  assert.deepEqual(m.view().flatMap((g) => g.calls.map((c) => c.toolCallId)), ['x']);
  m.setFilter({ status: 'error' });
  assert.equal(m.view().flatMap((g) => g.calls).length, 3);
});

test('mcp: what a trust prompt says an entry runs, the enterprise grant\'s ID token command included', () => {
  assert.equal(launchText({ transport: 'stdio', command: 'npx', args: ['-y', 'server x'], env: { TOKEN: 'secret' } }), "npx -y 'server x' (env: TOKEN)");
  assert.equal(launchText({ transport: 'http', url: 'https://mcp.example/mcp' }), 'https://mcp.example/mcp');
  const enterprise = {
    transport: 'http',
    url: 'https://mcp.wiki.example/mcp',
    oauth: { grant: 'enterprise', clientId: 'nexus', idp: { issuer: 'https://idp.example', clientId: 'i', idTokenCommand: ['acme-sso', 'print id token'] } },
  };
  assert.equal(launchText(enterprise), "https://mcp.wiki.example/mcp (its ID token from: acme-sso 'print id token')");
});

test('hooks: what an approval question says a hook runs and pins', () => {
  const hook = {
    name: 'preToolUse[0]',
    event: 'preToolUse',
    match: 'write_file|edit_file',
    command: ['./hooks/guard.sh', 'a b'],
    timeout: '30s',
    files: [{ path: 'hooks/guard.sh', sha256: '0123456789abcdef0123' }],
    pin: 'sha256:00',
    trusted: false,
  };
  assert.equal(hookText(hook), "./hooks/guard.sh 'a b' (preToolUse, tools matching write_file|edit_file; pins hooks/guard.sh sha256:0123456789ab)");
  assert.equal(hookText({ ...hook, event: 'userPromptSubmit', match: undefined, files: undefined }), "./hooks/guard.sh 'a b' (userPromptSubmit)");
});

test('remembered answers: each names what it covers; an answer from before scopes is marked broad', { timeout }, async () => {
  const ws = makeWorkspace(askWrites);
  // An approvals file of version 1: its answers had no scope.
  fs.writeFileSync(
    path.join(ws, '.nexus', 'approvals.json'),
    JSON.stringify({
      version: 1,
      approvals: [{ appId: 'alpha', tool: 'execute_command', definitionHash: 'h', allow: true, time: '2026-01-01T00:00:00Z' }],
    }),
  );
  const d = new Daemon(ws);
  d.conn.onRequest(Requests.requestPermission, () => 'allow_always');
  try {
    await d.initialize();
    const r = await call(d.conn, Methods.toolsExecute, { toolName: 'write_file', arguments: { path: 'notes/a.txt', content: 'yes' } });
    assert.equal(r.success, true, JSON.stringify(r));
    const { approvals } = await call(d.conn, Methods.approvalsList, {});
    assert.equal(approvals.length, 2, JSON.stringify(approvals));
    const [person, broad] = approvals;
    assert.equal(person.toolName, 'write_file:notes/a.txt');
    assert.equal(person.scope, 'path');
    assert.equal(rememberedLabel(person), 'write_file:notes/a.txt');
    assert.equal(rememberedDescription(person), 'always allow · you and your agents');
    assert.match(rememberedTooltip(person), /^Always allow: write_file "notes\/a.txt"\nFor you and every agent session acting for you/);
    assert.equal(broad.broad, true);
    assert.equal(rememberedLabel(broad), 'execute_command:**');
    assert.equal(rememberedDescription(broad), 'always allow · app:alpha · BROAD: every call of the tool');
    assert.match(rememberedTooltip(broad), /Broad: remembered before answers had scopes/);
    // Revoking by the answer's name forgets that one answer.
    const rev = await call(d.conn, Methods.approvalsRevoke, { appId: broad.appId, toolName: broad.toolName, serverName: broad.serverName });
    assert.equal(rev.revoked, true);
    const after = await call(d.conn, Methods.approvalsList, {});
    assert.deepEqual(
      after.approvals.map((a) => a.toolName),
      ['write_file:notes/a.txt'],
    );
  } finally {
    await d.close();
  }
});
