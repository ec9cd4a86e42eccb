// The model of the Changes view: the workspace's checkpoints
// (nexus/checkpoints/list) grouped into sessions, their turns, the calls of
// each turn and the files of each call, with what may be undone or redone
// at each level; without VS Code (test/changes.test.ts). changes.ts shows it
// as a tree. Every label is inert: a session's title, a tool's name, an
// author and a path are written by a model, an app, an MCP server or a file.

import { inertLine } from './inert';
import type { Checkpoint, FileChange, CheckpointsUndoParams } from './protocol';

/** Whether a node's changes stand, are all undone, or some of each. */
export type Undone = 'none' | 'partly' | 'all';

/** What the Undo and Redo actions of a node do. */
export interface Actions {
  /** The undo of what still stands; absent when everything is undone. */
  undo?: CheckpointsUndoParams;
  /** The undos to reverse (nexus/checkpoints/redo {id}), newest first. */
  redo: string[];
}

export interface FileNode {
  kind: 'file';
  checkpoint: Checkpoint;
  file: FileChange;
  undone: boolean;
  label: string;
  description: string;
}

export interface CallNode {
  kind: 'call';
  checkpoint: Checkpoint;
  undone: Undone;
  actions: Actions;
  label: string;
  description: string;
  tooltip: string;
  files: FileNode[];
  /** The paths whose change was seen but not recorded, and why. */
  skipped: SkippedNode[];
}

export interface SkippedNode {
  kind: 'skipped';
  checkpoint: Checkpoint;
  path: string;
  label: string;
  description: string;
}

export interface TurnNode {
  kind: 'turn';
  /** The session's newest turn shows open. */
  expanded: boolean;
  session: string;
  turn: string;
  undone: Undone;
  actions: Actions;
  label: string;
  description: string;
  calls: CallNode[];
}

export interface SessionNode {
  kind: 'session';
  /** The newest session shows open. */
  expanded: boolean;
  session: string;
  /** The newest change's time (RFC 3339). */
  time: string;
  undone: Undone;
  actions: Actions;
  label: string;
  description: string;
  tooltip: string;
  /** Newest first; then the calls of no turn and the undo and redo records. */
  turns: TurnNode[];
  calls: CallNode[];
}

export type ChangeNode = SessionNode | TurnNode | CallNode | FileNode | SkippedNode;

/** Options of changeTree: the agent sessions' titles the extension knows,
 * by session id, and how a time is shown. */
export interface TreeOptions {
  titles?: ReadonlyMap<string, string>;
  formatTime?: (iso: string) => string;
}

/** shortId is the end of an id: the ids are UUIDv7, whose first digits are
 * the time, the same for the calls of a minute. */
export function shortId(id: string): string {
  const hex = id.replace(/-/g, '');
  return inertLine(hex.length > 8 ? `…${hex.slice(-6)}` : id);
}

/** sessionLabel names a session: the agent session's title when known,
 * "app: ID" for an app's own calls, else its id shortened. */
export function sessionLabel(session: string, titles?: ReadonlyMap<string, string>): string {
  if (session === '') {
    return 'Without a session';
  }
  const title = titles?.get(session) ?? titles?.get(session.replace(/^agent:/, ''));
  if (title) {
    return inertLine(title);
  }
  for (const kind of ['app', 'mcp', 'agent']) {
    if (session.startsWith(`${kind}:`)) {
      const rest = session.slice(kind.length + 1);
      return inertLine(`${kind === 'mcp' ? 'MCP client' : kind === 'agent' ? 'agent session' : 'app'}: ${kind === 'app' ? rest : shortOr(rest)}`);
    }
  }
  return inertLine(`session ${shortOr(session)}`);
}

function shortOr(id: string): string {
  return id.length > 12 ? shortId(id) : id;
}

/** actionLetter is the SCM view's letter of a file's action. */
export function actionLetter(action: string): string {
  return action === 'added' ? 'A' : action === 'deleted' ? 'D' : 'M';
}

/** callLabel is a checkpoint's row: "write_file …a1b2c3", "undo …a1b2c3". */
export function callLabel(c: Checkpoint): string {
  const name = c.kind === 'call' ? c.toolName || 'tool call' : c.kind;
  const server = c.kind === 'call' && c.serverName ? `${c.serverName}/` : '';
  return inertLine(`${server}${name} ${shortId(c.id)}`);
}

/** diffTitle is the title of a file's diff editor: "path (call …a1b2c3 by agent:…)". */
export function diffTitle(c: Checkpoint, path: string): string {
  const what = c.kind === 'call' ? 'call' : c.kind;
  return inertLine(`${path} (${what} ${shortId(c.id)} by ${c.author ? shortAuthor(c.author) : 'unknown'})`);
}

/** plural is "1 file", "2 files". */
export function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

function undoneOf(flags: boolean[]): Undone {
  const n = flags.filter(Boolean).length;
  return n === 0 ? 'none' : n === flags.length ? 'all' : 'partly';
}

/** redoOf is the undos that take back some of calls, newest first. */
function redoOf(calls: Checkpoint[], byId: ReadonlyMap<string, Checkpoint>): string[] {
  const ids = [...new Set(calls.map((c) => c.undoneBy).filter((u): u is string => !!u))];
  const time = (id: string) => byId.get(id)?.time ?? '';
  return ids.sort((a, b) => time(b).localeCompare(time(a)));
}

function undoneWord(u: Undone): string {
  return u === 'all' ? 'undone' : u === 'partly' ? 'partly undone' : '';
}

function fileNode(c: Checkpoint, f: FileChange, undone: boolean): FileNode {
  const slash = f.path.lastIndexOf('/');
  const dir = slash < 0 ? '' : f.path.slice(0, slash);
  return {
    kind: 'file',
    checkpoint: c,
    file: f,
    undone,
    label: inertLine(f.path.slice(slash + 1)),
    // The A/M/D letter is the row's decoration (changes.ts), as in the SCM view.
    description: [inertLine(dir), undone ? 'undone' : ''].filter(Boolean).join(' · '),
  };
}

/** shortAuthor is an author with a long id shortened: "agent:…a1b2c3". */
export function shortAuthor(author: string): string {
  const colon = author.indexOf(':');
  if (colon < 0) {
    return inertLine(author);
  }
  return inertLine(`${author.slice(0, colon + 1)}${shortOr(author.slice(colon + 1))}`);
}

function callNode(c: Checkpoint, formatTime: (iso: string) => string): CallNode {
  // A call is undone while an undo takes it back; an undo record is
  // "undone" once a redo reversed it (no call names it in undoneBy).
  const undone = c.kind === 'call' && !!c.undoneBy;
  const actions: Actions = { redo: [] };
  if (c.kind === 'call') {
    if (undone) {
      actions.redo = [c.undoneBy as string];
    } else {
      actions.undo = { call: c.id };
    }
  }
  const files = c.files.map((f) => fileNode(c, f, undone));
  const skippedNodes = (c.skipped ?? []).map((k): SkippedNode => ({
    kind: 'skipped',
    checkpoint: c,
    path: k.path,
    label: inertLine(k.path),
    description: inertLine(`not recorded: ${k.reason}`),
  }));
  const skipped = c.skipped?.length ? `, ${plural(c.skipped.length, 'path')} skipped` : '';
  const tooltip = [
    `${c.kind === 'call' ? 'Tool call' : c.kind === 'undo' ? 'Undo' : 'Redo'} ${c.id}`,
    c.toolName ? `Tool: ${c.serverName ? `${c.serverName}/` : ''}${c.toolName}` : '',
    `By: ${c.author || 'unknown'}`,
    c.turn ? `Turn: ${c.turn}` : '',
    `At: ${formatTime(c.time)}`,
    c.undoneBy ? `Undone by ${c.undoneBy}` : '',
    c.undoes?.length ? `${c.kind === 'undo' ? 'Undoes' : 'Reverses'}: ${c.undoes.join(', ')}` : '',
    ...(c.skipped ?? []).map((s) => `Skipped ${s.path}: ${s.reason}`),
  ];
  return {
    kind: 'call',
    checkpoint: c,
    undone: undone ? 'all' : 'none',
    actions,
    label: callLabel(c),
    // Who, when it is not the session itself (an agent's or an app's own).
    description: [c.author === c.session || c.author === `agent:${c.session}` ? '' : shortAuthor(c.author), plural(c.files.length, 'file') + skipped, undone ? 'undone' : '']
      .filter(Boolean)
      .map(inertLine)
      .join(' · '),
    tooltip: tooltip.filter(Boolean).map(inertLine).join('\n'),
    files,
    skipped: skippedNodes,
  };
}

/** turnLabel is "Turn N": the turn's own number, else its place among the
 * session's turns, oldest first. */
function turnLabel(turn: string, place: number): string {
  return /^\d{1,9}$/.test(turn) ? `Turn ${turn}` : `Turn ${place}`;
}

/** changeTree groups checkpoints (newest first, as nexus/checkpoints/list
 * answers) into sessions → turns → calls → files, newest first at each
 * level. An undo's or a redo's record is listed under its session, after
 * its turns; only a tool call's checkpoint counts as a change. */
export function changeTree(checkpoints: readonly Checkpoint[], opts: TreeOptions = {}): SessionNode[] {
  const formatTime = opts.formatTime ?? ((iso: string) => new Date(iso).toLocaleString());
  const byId = new Map(checkpoints.map((c) => [c.id, c]));
  const sorted = [...checkpoints].sort((a, b) => b.time.localeCompare(a.time));
  const sessions = new Map<string, Checkpoint[]>();
  for (const c of sorted) {
    const list = sessions.get(c.session) ?? [];
    list.push(c);
    sessions.set(c.session, list);
  }
  const out: SessionNode[] = [];
  for (const [session, list] of sessions) {
    const calls = list.filter((c) => c.kind === 'call');
    const turns = new Map<string, Checkpoint[]>();
    for (const c of calls) {
      if (c.turn) {
        const t = turns.get(c.turn) ?? [];
        t.push(c);
        turns.set(c.turn, t);
      }
    }
    // Turns numbered by their first change, oldest first.
    const oldestFirst = [...turns.entries()].sort((a, b) => a[1][a[1].length - 1].time.localeCompare(b[1][b[1].length - 1].time));
    const turnNodes: TurnNode[] = oldestFirst.map(([turn, tcs], i) => {
      const undone = undoneOf(tcs.map((c) => !!c.undoneBy));
      const files = new Set(tcs.flatMap((c) => c.files.map((f) => f.path)));
      return {
        kind: 'turn',
        expanded: i === oldestFirst.length - 1,
        session,
        turn,
        undone,
        actions: { undo: undone === 'all' ? undefined : { session, turn }, redo: redoOf(tcs, byId) },
        label: turnLabel(turn, i + 1),
        description: [plural(tcs.length, 'call'), plural(files.size, 'file'), undoneWord(undone)].filter(Boolean).join(' · '),
        calls: tcs.map((c) => callNode(c, formatTime)),
      };
    });
    turnNodes.reverse();
    const undone = undoneOf(calls.map((c) => !!c.undoneBy));
    const authors = [...new Set(list.map((c) => c.author).filter(Boolean))];
    out.push({
      kind: 'session',
      expanded: out.length === 0,
      session,
      time: list[0].time,
      undone,
      actions: { undo: calls.length === 0 || undone === 'all' ? undefined : { session }, redo: redoOf(calls, byId) },
      label: sessionLabel(session, opts.titles),
      description: [formatTime(list[0].time), plural(calls.length, 'change'), undoneWord(undone)].filter(Boolean).map(inertLine).join(' · '),
      tooltip: [`Session ${session || '(none)'}`, `By: ${authors.join(', ') || 'unknown'}`].map(inertLine).join('\n'),
      turns: turnNodes,
      calls: list.filter((c) => c.kind !== 'call' || !c.turn).map((c) => callNode(c, formatTime)),
    });
  }
  return out;
}

/** children is a node's children in the tree. */
export function children(n: ChangeNode): ChangeNode[] {
  switch (n.kind) {
    case 'session':
      return [...n.turns, ...n.calls];
    case 'turn':
      return n.calls;
    case 'call':
      return [...n.files, ...n.skipped];
    case 'file':
    case 'skipped':
      return [];
  }
}

/** A node that Undo and Redo act on. */
export type Undoable = SessionNode | TurnNode | CallNode;

export function isUndoable(n: ChangeNode): n is Undoable {
  return n.kind === 'session' || n.kind === 'turn' || n.kind === 'call';
}

/** contextValue is "change.KIND" with ".undo" when it may be undone and
 * ".redo" when it may be redone (package.json's menus match on them). */
export function contextValue(n: ChangeNode): string {
  if (n.kind === 'file') {
    return n.undone ? 'change.file.undone' : 'change.file';
  }
  if (n.kind === 'skipped') {
    return 'change.skipped';
  }
  return `change.${n.kind}${n.actions.undo ? '.undo' : ''}${n.actions.redo.length > 0 ? '.redo' : ''}`;
}

/** whatUndo says, for the confirmation, what an undo of a node changes:
 * the files it restores, each with what becomes of it. */
export function whatUndo(n: Undoable): string[] {
  const calls = n.kind === 'call' ? [n] : n.kind === 'turn' ? n.calls : [...n.turns.flatMap((t) => t.calls), ...n.calls];
  // Oldest first, each file's first change decides what it becomes.
  const first = new Map<string, string>();
  for (const c of [...calls].sort((a, b) => a.checkpoint.time.localeCompare(b.checkpoint.time))) {
    if (c.checkpoint.kind !== 'call' || c.undone === 'all') {
      continue;
    }
    for (const f of c.checkpoint.files) {
      if (!first.has(f.path)) {
        first.set(f.path, f.action);
      }
    }
  }
  const verb: Record<string, string> = { added: 'deleted (it was added)', deleted: 'restored (it was deleted)', modified: 'restored to before' };
  return [...first.entries()].sort((a, b) => a[0].localeCompare(b[0])).map(([p, a]) => inertLine(`${p}: ${verb[a] ?? 'restored'}`));
}

/** nodeName names a node in a confirmation: "Turn 2 of app: alpha". */
export function nodeName(n: Undoable, session?: SessionNode): string {
  if (n.kind === 'session') {
    return `the session "${n.label}"`;
  }
  const of = session ? ` of "${session.label}"` : '';
  return n.kind === 'turn' ? `${n.label}${of}` : `the call ${n.label}${of}`;
}
