// The Agent Chat's model: the reducer folds a session's nexus/agent/update
// stream into entries (the markdown is test/markdown.test.ts's).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PendingApprovals } from '../src/approvalsModel';
import { emptyChat, endTurn, reduce, view } from '../src/chatModel';
import type { PermissionParams } from '../src/protocol';

test('chat reducer: chunks join, tool calls update in place, commands and the stop reason', () => {
  const s = emptyChat();
  s.sessionId = 's1';
  reduce(s, { sessionUpdate: 'available_commands_update', availableCommands: [{ name: 'cost', description: 'the cost' }] });
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'write it' } });
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'image', text: '', data: 'iVBORw0K', mimeType: 'image/png' } });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'Sure, ' } });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: '**done**' } });
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Write file', kind: 'edit', status: 'pending' });
  reduce(s, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'in_progress' });
  reduce(s, {
    sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed',
    content: [{ type: 'content', content: { type: 'text', text: '{"ok":true}' } }],
  });
  reduce(s, { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: 'after' } });
  reduce(s, { sessionUpdate: 'usage_update', used: 1500, size: 8000 });
  reduce(s, { sessionUpdate: 'something_new' });
  endTurn(s, 'max_turn_requests');
  assert.deepEqual(s.commands, [{ name: 'cost', description: 'the cost' }]);
  assert.deepEqual(s.entries, [
    { kind: 'user', text: 'write it [image, image/png]' },
    { kind: 'agent', text: 'Sure, **done**' },
    { kind: 'tool', toolCallId: 'c1', title: 'Write file', toolKind: 'edit', status: 'completed', detail: '{"ok":true}', input: '', path: '' },
    { kind: 'agent', text: 'after' },
    { kind: 'stop', text: '(max_turn_requests)' },
  ]);
  assert.equal(s.usage, '1.5k / 8.0k tokens');
  assert.equal(s.running, false);
  const v = view(s, new Set(['c1']));
  assert.equal(v.entries[1].html, '<p>Sure, <strong>done</strong></p>');
  assert.equal((v.entries[2] as { detail: string }).detail, '{\n  "ok": true\n}', 'a JSON result is indented');
  assert.equal(v.entries[2].waiting, true);
});

test('approvals: a request is answered by its tool call id', async () => {
  const m = new PendingApprovals();
  const params = { toolCall: { toolCallId: 'c9', toolName: 'write_file', author: 'agent:s1' }, icerc: {}, options: [] } as unknown as PermissionParams;
  const { answer } = m.add(params);
  assert.equal(m.byToolCall('c9')?.params, params);
  assert.equal(m.answerToolCall('nope', 'allow_once'), false);
  assert.equal(m.answerToolCall('c9', 'allow_once'), true);
  assert.equal(await answer, 'allow_once');
  assert.equal(m.answerToolCall('c9', 'allow_once'), false);
});

test('chat reducer: a plan update replaces the turn\'s plan in place; a later turn starts its own; the steps are inert', () => {
  const s = emptyChat();
  const plan = (...steps: [string, string][]): void => {
    reduce(s, { sessionUpdate: 'plan', entries: steps.map(([content, status]) => ({ content, priority: 'medium', status })) });
  };
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'do it' } });
  plan(['Read', 'in_progress'], ['Write', 'pending']);
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Read file', kind: 'read', status: 'completed' });
  plan(['Read', 'completed'], ['Write\u202e\n[x] forged', 'in_progress']);
  reduce(s, { sessionUpdate: 'plan', entries: [{ content: 7 }, null, { content: 'No status' }] });
  assert.deepEqual(s.entries.filter((e) => e.kind === 'plan'), [{ kind: 'plan', steps: [{ content: 'No status', status: 'pending' }] }]);
  plan(['Read', 'completed'], ['Write\u202e\n[x] forged', 'in_progress']);
  assert.equal(s.entries.length, 3, 'one plan entry in the turn, where it started');
  assert.equal(s.entries[1].kind, 'plan');
  reduce(s, { sessionUpdate: 'user_message_chunk', content: { type: 'text', text: 'next' } });
  reduce(s, { sessionUpdate: 'plan' });
  assert.deepEqual(s.entries[4], { kind: 'plan', steps: [] }, 'a cleared plan in a new turn');
  const v = view(s, new Set());
  assert.deepEqual(v.entries[1], {
    kind: 'plan',
    steps: [{ content: 'Read', status: 'completed' }, { content: 'Write\\u202e\\n[x] forged', status: 'in_progress' }],
  });
});

test('chat reducer: a subagent\'s tool call is marked with the task call it is under', () => {
  const s = emptyChat();
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'Subagent reviewer: read a.txt', kind: 'think', status: 'in_progress' });
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'reviewer: Read a.txt', kind: 'read', status: 'pending', parentToolCallId: 't1' });
  reduce(s, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', parentToolCallId: 't1' });
  const v = view(s, new Set());
  assert.equal((v.entries[0] as { parent?: string }).parent, undefined);
  assert.equal((v.entries[1] as { parent?: string }).parent, 't1');
  assert.equal((v.entries[1] as { status?: string }).status, 'completed');
});

test('chat reducer: a tool card has its line in words, its arguments and its file; its diff stays after the answer', () => {
  const s = emptyChat();
  s.sessionId = 's1';
  reduce(s, {
    sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Write notes.txt', kind: 'edit', status: 'pending',
    rawInput: { path: 'notes.txt', content: 'hello\u202e' }, locations: [{ path: 'notes.txt' }],
  });
  const change = { path: 'notes.txt', action: 'added', diff: '@@ -0,0 +1 @@\n+hello\n', after: 'hello\n' };
  // While it waits, the diff comes from the question (chat.ts keeps it on the entry).
  const waiting = view(s, new Map([['c1', 'agent session s1 asks']]), new Map([['c1', [change]]]));
  const w = waiting.entries[0] as { diff?: { text: string }[]; waiting?: boolean; link?: string; input: string };
  assert.equal(w.waiting, true);
  assert.equal(w.link, 'notes.txt');
  assert.ok(w.input.includes('"path": "notes.txt"') && w.input.includes('hello\\u202e'), w.input);
  assert.ok(w.diff?.some((l) => l.text === '+hello'), JSON.stringify(w.diff));
  const t = s.entries[0] as { changes?: unknown };
  t.changes = [{ path: change.path, action: change.action, diff: change.diff }];
  reduce(s, {
    sessionUpdate: 'tool_call_update', toolCallId: 'c1', title: 'Wrote notes.txt, 5 bytes', status: 'completed',
    content: [{ type: 'content', content: { type: 'text', text: '{"path":"notes.txt","bytesWritten":5,"created":true}' } }],
  });
  const done = view(s, new Set()).entries[0] as { title: string; diff?: { text: string }[]; waiting?: boolean; changes?: unknown };
  assert.equal(done.title, 'Wrote notes.txt, 5 bytes');
  assert.equal(done.waiting, false);
  assert.ok(done.diff?.some((l) => l.text === '+hello'), 'the diff stays after the answer');
  assert.equal(done.changes, undefined, 'the webview gets the diff lines, not the changes');
  // A location outside the workspace is no link.
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c2', title: 'Read /etc/passwd', status: 'completed', locations: [{ path: '/etc/passwd' }] });
  assert.equal((view(s, new Set()).entries[1] as { link?: string }).link, undefined);
});

test('chat reducer: a completed call that was not asked about shows the diff it made, from its update', () => {
  const s = emptyChat();
  s.sessionId = 's1';
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c1', title: 'Write notes.txt', kind: 'edit', status: 'in_progress', locations: [{ path: 'notes.txt' }] });
  assert.equal((view(s, new Set()).entries[0] as { diff?: unknown }).diff, undefined, 'no diff before it ends');
  const diff = 'diff --git a/notes.txt b/notes.txt\nindex 1..2 100644\n--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\u202e\n';
  reduce(s, {
    sessionUpdate: 'tool_call_update', toolCallId: 'c1', title: 'Wrote notes.txt, 5 bytes', status: 'completed',
    changes: [{ path: 'notes.txt', action: 'modified', diff }, { path: 'logo.png', action: 'added', diff: '', binary: true }, { path: 7 } as never],
    moreChanges: 2,
  });
  const done = view(s, new Set()).entries[0] as { diff?: { text: string; kind: string }[]; changes?: unknown; moreChanges?: unknown };
  assert.deepEqual(done.diff, [
    { text: 'modified notes.txt', kind: 'meta' },
    { text: '@@ -1 +1 @@', kind: 'hunk' },
    { text: '-old', kind: 'del' },
    { text: '+new\\u202e', kind: 'add' },
    { text: 'added logo.png (binary)', kind: 'meta' },
    { text: '… and 2 more files changed', kind: 'meta' },
  ]);
  assert.equal(done.changes, undefined);
  assert.equal(done.moreChanges, undefined);
  // The update's diff takes the place of the question's: what was written.
  const t = s.entries[0] as { changes?: unknown };
  t.changes = [{ path: 'notes.txt', action: 'added', diff: '@@ -0,0 +1 @@\n+asked\n' }];
  reduce(s, { sessionUpdate: 'tool_call_update', toolCallId: 'c1', status: 'completed', changes: [{ path: 'notes.txt', action: 'modified', diff }] });
  assert.ok((view(s, new Set()).entries[0] as { diff?: { text: string }[] }).diff?.some((l) => l.text === '-old'));
  // A call that changed nothing shows none.
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 'c2', title: 'Read notes.txt', status: 'completed' });
  assert.equal((view(s, new Set()).entries[1] as { diff?: unknown }).diff, undefined);
});
