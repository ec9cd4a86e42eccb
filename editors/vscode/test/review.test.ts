// The review of a proposed write: the real nexusd's question carries the
// change it computed, and the models show it inert.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { CancellationToken } from 'vscode-jsonrpc/node.js';
import { PendingApprovals } from '../src/approvalsModel';
import { view, emptyChat, reduce } from '../src/chatModel';
import { call, Methods, type PermissionParams, type ProposedChange, Requests } from '../src/protocol';
import { compactDiff, diffTitle, parseProposed, proposedContent, proposedPath, reviewable } from '../src/reviewModel';
import { Daemon, makeWorkspace, waitFor } from './nexusd';

const timeout = 30_000;

test('review: the question about a write carries the change nexusd computed; Reject leaves the file, Accept writes it', { timeout }, async () => {
  const ws = makeWorkspace('tools:\n  policy:\n    edit_file: ask\n');
  fs.writeFileSync(path.join(ws, 'notes.md'), 'one\ntwo\n');
  const d = new Daemon(ws);
  const pending = new PendingApprovals();
  d.conn.onRequest(Requests.requestPermission, async (params: PermissionParams, token: CancellationToken) => {
    const { pending: p, answer } = pending.add(params);
    token.onCancellationRequested(() => pending.cancel(p.id));
    return (await answer) ?? 'reject_once';
  });
  try {
    await d.initialize();
    const edit = () => call(d.conn, Methods.toolsExecute, { toolName: 'edit_file', arguments: { path: 'notes.md', oldText: 'two', newText: '2' } });
    const rejected = edit();
    await waitFor('the question', () => pending.size === 1);
    const [p] = pending.list();
    const [c] = p.params.icerc.changes ?? [];
    assert.deepEqual({ path: c.path, action: c.action, before: c.before, after: c.after }, { path: 'notes.md', action: 'modified', before: 'one\ntwo\n', after: 'one\n2\n' });
    assert.match(c.diff, /-two\n\+2\n/);
    assert.deepEqual(
      compactDiff(p.params.icerc.changes).map((l) => `${l.kind} ${l.text}`),
      ['meta modified notes.md', 'hunk @@ -1,2 +1,2 @@', 'meta  one', 'del -two', 'add +2'],
    );
    assert.equal(pending.answer(p.id, 'reject_once'), true);
    assert.equal((await rejected).success, false);
    assert.equal(fs.readFileSync(path.join(ws, 'notes.md'), 'utf8'), 'one\ntwo\n');

    const accepted = edit();
    await waitFor('the second question', () => pending.size === 1);
    assert.equal(pending.answer(pending.list()[0].id, 'allow_once'), true);
    const r = await accepted;
    assert.equal(r.success, true, JSON.stringify(r));
    assert.equal(fs.readFileSync(path.join(ws, 'notes.md'), 'utf8'), 'one\n2\n');
  } finally {
    await d.close();
  }
});

const hostile: ProposedChange = {
  path: 'src/\u202eevil\x1b[2K.ts',
  action: 'modified',
  diff: 'diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -1 +1,30 @@\n-\x1b]0;title\x07old\r\n' + '+\tnew\u2066\n'.repeat(30),
  before: 'old\r\n',
  after: 'new\n',
};

test('review: the compact diff is inert and cut, with what is left counted', () => {
  const lines = compactDiff([hostile], 20);
  assert.equal(lines[0].text, 'modified src/\\u202eevil\\x1b[2K.ts');
  assert.deepEqual(lines[2], { text: '-\\x1b]0;title\\x07old\\r', kind: 'del' });
  assert.deepEqual(lines[3], { text: '+    new\\u2066', kind: 'add' });
  assert.equal(lines.length, 1 + 20 + 1);
  assert.equal(lines.at(-1)!.text, '… 12 more lines');
  for (const l of lines) {
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(l.text, /[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]/u, l.text);
  }
  assert.deepEqual(compactDiff([{ path: 'big.txt', action: 'added', diff: '', truncated: true }]).map((l) => l.text), ['added big.txt', '(too large to show a diff)']);
  assert.deepEqual(compactDiff(undefined), []);
});

test('review: the sides of the diff editor, and its title', () => {
  const ref = { id: 7, index: 0, side: 'after' as const };
  const p = proposedPath(ref, 'docs/notes.md');
  assert.equal(p, '/7/0/after/docs/notes.md');
  assert.deepEqual(parseProposed(p), ref);
  assert.equal(parseProposed('/x/0/after/a'), undefined);
  assert.equal(proposedContent({ path: 'n.md', action: 'added', diff: '', after: 'hi\n' }, 'before'), '');
  assert.equal(proposedContent({ path: 'n.md', action: 'added', diff: '', after: 'hi\n' }, 'after'), 'hi\n');
  assert.match(proposedContent({ path: 'b', action: 'modified', diff: '', binary: true }, 'after'), /binary/);
  assert.match(proposedContent(undefined, 'after'), /answered/);
  assert.equal(reviewable({ path: 'b', action: 'modified', diff: '', binary: true }), false);
  assert.equal(reviewable(hostile), true);
  const params = { toolCall: { toolCallId: 'c', toolName: 'write_file', author: 'agent:s1' }, icerc: { asker: 'agent session s1\x1b[31m acting for the person', intent: '', command: '', expectedOutcome: '', risk: { level: 'medium', scope: '' } }, options: [] } as unknown as PermissionParams;
  const agent = { ...params, icerc: { ...params.icerc, asker: 'agent session 01a221c3-fbb5-74c9-94ef-790eb343fddf acting for the person' } };
  assert.equal(diffTitle(agent, { path: 'notes.txt', action: 'added', diff: '' }), 'notes.txt — proposed by agent session 01a221c3… acting for the person (Accept / Reject)');
  assert.equal(diffTitle(params, hostile), '\\u202eevil\\x1b[2K.ts — proposed by agent session s1\\x1b[31m acting for the person (Accept / Reject)');
});

test('review: a waiting card carries its compact diff, an answered one none', () => {
  const s = emptyChat();
  reduce(s, { sessionUpdate: 'tool_call', toolCallId: 't1', title: 'write_file', kind: 'edit', status: 'pending' });
  const waiting = view(s, new Map([['t1', 'prompt']]), new Map([['t1', [hostile]]]));
  const card = waiting.entries.find((e) => e.kind === 'tool')!;
  assert.equal(card.diff?.[0].text, 'modified src/\\u202eevil\\x1b[2K.ts');
  const answered = view(s, new Map(), new Map([['t1', [hostile]]]));
  assert.equal(answered.entries.find((e) => e.kind === 'tool')!.diff, undefined);
});
