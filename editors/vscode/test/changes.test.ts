// The Changes view's model: checkpoints grouped into sessions, turns,
// calls and files; what is undone greyed with its Redo; every label inert.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { actionLetter, changeTree, children, contextValue, diffTitle, sessionLabel, shortId, whatUndo } from '../src/changesModel';
import type { Checkpoint } from '../src/protocol';

const time = (s: number) => new Date(Date.UTC(2026, 10, 28, 10, 0, s)).toISOString();
const opts = { formatTime: (iso: string) => iso.slice(11, 19) };

function cp(id: string, over: Partial<Checkpoint> = {}): Checkpoint {
  return { id, kind: 'call', toolName: 'write_file', author: 'agent:s1', session: 's1', turn: '1', time: time(0), files: [], ...over };
}

// A session of two turns, an app's calls (no turn) and an undo of turn 1.
const undo = cp('u1', { kind: 'undo', toolName: undefined, author: 'editor', turn: undefined, time: time(30), undoes: ['c1', 'c2'], files: [{ path: 'a.txt', action: 'deleted' }] });
const listed: Checkpoint[] = [
  cp('a2', { session: 'app:alpha', author: 'app:alpha', appId: 'alpha', turn: undefined, time: time(40), files: [{ path: 'x/y.md', action: 'modified' }] }),
  undo,
  cp('c4', { turn: '2', time: time(20), toolName: 'execute_command', files: [{ path: 'gone.txt', action: 'deleted' }, { path: 'src/b.go', action: 'modified' }], skipped: [{ path: 'big.bin', reason: 'over the size cap' }] }),
  cp('c3', { turn: '2', time: time(15), toolName: 'edit_file', files: [{ path: 'src/b.go', action: 'modified' }] }),
  cp('c2', { time: time(10), undoneBy: 'u1', toolName: 'edit_file', files: [{ path: 'c.txt', action: 'modified' }] }),
  cp('c1', { time: time(5), undoneBy: 'u1', files: [{ path: 'a.txt', action: 'added' }] }),
  cp('a1', { session: 'app:alpha', author: 'app:alpha', appId: 'alpha', turn: undefined, time: time(35), files: [{ path: 'x/z.md', action: 'added' }] }),
];

test('changes: sessions, turns, calls and files, newest first', () => {
  const tree = changeTree(listed, { ...opts, titles: new Map([['s1', 'Fix the build']]) });
  assert.deepEqual(tree.map((s) => [s.session, s.label, s.description]), [
    ['app:alpha', 'app: alpha', '10:00:40 · 2 changes'],
    ['s1', 'Fix the build', '10:00:30 · 4 changes · partly undone'],
  ]);
  const [app, s1] = tree;
  assert.deepEqual(app.turns, []);
  assert.deepEqual(app.calls.map((c) => c.checkpoint.id), ['a2', 'a1']);

  assert.deepEqual(s1.turns.map((t) => [t.label, t.description, t.undone]), [
    ['Turn 2', '2 calls · 2 files', 'none'],
    ['Turn 1', '2 calls · 2 files · undone', 'all'],
  ]);
  // The undo's record is listed under its session, after the turns.
  assert.deepEqual(children(s1).map((n) => n.kind === 'call' ? n.checkpoint.id : n.kind === 'turn' ? `turn ${n.turn}` : n.kind), ['turn 2', 'turn 1', 'u1']);
  const [t2, t1] = s1.turns;
  assert.deepEqual(t2.calls.map((c) => [c.label, c.description]), [
    [`execute_command ${shortId('c4')}`, '2 files, 1 path skipped'],
    [`edit_file ${shortId('c3')}`, '1 file'],
  ]);
  assert.match(t2.calls[0].tooltip, /Skipped big\.bin: over the size cap/);
  // What was seen but not recorded is listed under its call, never dropped.
  assert.deepEqual(children(t2.calls[0]).map((n) => [n.kind, n.label, n.description]), [
    ['file', 'gone.txt', ''],
    ['file', 'b.go', 'src'],
    ['skipped', 'big.bin', 'not recorded: over the size cap'],
  ]);
  assert.equal(contextValue(t2.calls[0].skipped[0]), 'change.skipped');
  // The newest session and each session's newest turn show open.
  assert.deepEqual([app.expanded, s1.expanded, t2.expanded, t1.expanded], [true, false, true, false]);
  // Who made a change shows when it is not the session's own: the undo's.
  assert.deepEqual([s1.calls[0].label, s1.calls[0].description], [`undo ${shortId('u1')}`, 'editor · 1 file']);
  assert.deepEqual(t2.calls[0].files.map((f) => [f.label, f.description]), [
    ['gone.txt', ''],
    ['b.go', 'src'],
  ]);
  assert.deepEqual(t1.calls[1].files.map((f) => [f.label, f.description, f.undone]), [['a.txt', 'undone', true]]);
});

test('changes: what Undo and Redo do at each level', () => {
  const [app, s1] = changeTree(listed, opts);
  const [t2, t1] = s1.turns;
  assert.deepEqual(s1.actions, { undo: { session: 's1' }, redo: ['u1'] });
  assert.deepEqual(t2.actions, { undo: { session: 's1', turn: '2' }, redo: [] });
  assert.deepEqual(t1.actions, { undo: undefined, redo: ['u1'] });
  assert.deepEqual(t2.calls[0].actions, { undo: { call: 'c4' }, redo: [] });
  assert.deepEqual(t1.calls[0].actions, { redo: ['u1'] });
  assert.deepEqual(app.actions, { undo: { session: 'app:alpha' }, redo: [] });
  // The menus' contexts: Undo where something stands, Redo where something is undone.
  assert.equal(contextValue(s1), 'change.session.undo.redo');
  assert.equal(contextValue(t2), 'change.turn.undo');
  assert.equal(contextValue(t1), 'change.turn.redo');
  assert.equal(contextValue(t1.calls[0]), 'change.call.redo');
  assert.equal(contextValue(t2.calls[1]), 'change.call.undo');
  assert.equal(contextValue(s1.calls[0]), 'change.call', 'an undo record has no action of its own');
  assert.equal(contextValue(t1.calls[0].files[0]), 'change.file.undone');
  // The confirmation names each file and what becomes of it; an undone
  // call's files are not restored again.
  assert.deepEqual(whatUndo(t2), ['gone.txt: restored (it was deleted)', 'src/b.go: restored to before']);
  assert.deepEqual(whatUndo(s1), ['gone.txt: restored (it was deleted)', 'src/b.go: restored to before']);
  assert.deepEqual(whatUndo(app), ['x/y.md: restored to before', 'x/z.md: deleted (it was added)']);
});

test('changes: a file added then edited in a turn is deleted by its undo', () => {
  const [s] = changeTree([
    cp('n2', { time: time(9), session: 'app:b', turn: undefined, files: [{ path: 'n.txt', action: 'modified' }] }),
    cp('n1', { time: time(2), session: 'app:b', turn: undefined, files: [{ path: 'n.txt', action: 'added' }] }),
  ], opts);
  assert.deepEqual(whatUndo(s), ['n.txt: deleted (it was added)']);
});

test('changes: a redo with several undos reverses the newest first', () => {
  const u2 = cp('u2', { kind: 'undo', turn: undefined, time: time(50), author: 'cli' });
  const tree = changeTree([u2, ...listed.map((c) => (c.id === 'c2' ? { ...c, undoneBy: 'u2' } : c))], opts);
  const s1 = tree.find((s) => s.session === 's1');
  assert.deepEqual(s1?.turns[1].actions.redo, ['u2', 'u1']);
});

test('changes: turns that are not numbers are numbered by their first change', () => {
  const tree = changeTree([
    cp('x2', { turn: '0192f0aa-bbbb-7ccc-8ddd-eeeeeeeeeee2', time: time(9) }),
    cp('x1', { turn: '0192f0aa-bbbb-7ccc-8ddd-eeeeeeeeeee1', time: time(3) }),
    cp('x0', { turn: '0192f0aa-bbbb-7ccc-8ddd-eeeeeeeeeee1', time: time(1) }),
  ], opts);
  assert.deepEqual(tree[0].turns.map((t) => [t.label, t.calls.length]), [['Turn 2', 1], ['Turn 1', 2]]);
});

test('changes: session labels', () => {
  const id = '0192f0aa-bbbb-7ccc-8ddd-eeeeeeabcdef';
  assert.equal(sessionLabel('app:alpha'), 'app: alpha');
  assert.equal(sessionLabel(id), 'session …abcdef');
  assert.equal(sessionLabel(`agent:${id}`), 'agent session: …abcdef');
  assert.equal(sessionLabel(`agent:${id}`, new Map([[id, 'Plan']])), 'Plan');
  assert.equal(sessionLabel('mcp:short'), 'MCP client: short');
  assert.equal(sessionLabel(''), 'Without a session');
  assert.equal(shortId(id), '…abcdef');
  assert.equal(diffTitle(cp(id, { author: 'agent:s1' }), 'src/b.go'), 'src/b.go (call …abcdef by agent:s1)');
  assert.equal(diffTitle(cp('c1', { author: `agent:${id}` }), 'a.txt'), 'a.txt (call c1 by agent:…abcdef)');
  assert.equal(actionLetter('added'), 'A');
  assert.equal(actionLetter('deleted'), 'D');
  assert.equal(actionLetter('modified'), 'M');
});

test('changes: what a model, an app or a file wrote shows inert', () => {
  const evil = '\x1b[2J\u202eevil\nline';
  const tree = changeTree([
    cp('e1', {
      session: `app:${evil}`,
      author: `app:${evil}`,
      toolName: evil,
      serverName: evil,
      turn: evil,
      files: [{ path: `dir${evil}/f${evil}.txt`, action: 'added' }],
      skipped: [{ path: evil, reason: evil }],
    }),
  ], { ...opts, titles: new Map([[`app:${evil}`, evil]]) });
  const s = tree[0];
  const t = s.turns[0];
  const c = t.calls[0];
  const f = c.files[0];
  const k = c.skipped[0];
  const shown = [s.label, s.description, s.tooltip, t.label, t.description, c.label, c.description, c.tooltip, f.label, f.description, k.label, k.description, diffTitle(c.checkpoint, f.file.path), ...whatUndo(s)];
  for (const text of shown) {
    // Tooltips are lines joined by the view's own new lines.
    for (const line of text.split('\n')) {
      const bad = [...line].filter((ch) => ch.charCodeAt(0) < 0x20 || ch === '\x7f' || ch === '\u202e');
      assert.deepEqual(bad, [], `not inert: ${JSON.stringify(line)}`);
    }
  }
  assert.equal(s.label, '\\x1b[2J\\u202eevil\\nline');
  assert.equal(f.label, 'f\\x1b[2J\\u202eevil\\nline.txt');
});
