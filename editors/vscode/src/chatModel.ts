// The model of the Agent Chat view, without VS Code: the reducer of one
// session's nexus/agent/update stream into the entries the webview shows,
// and what the webview gets of them (the answer's markdown rendered by
// markdown.ts). chat.ts wires it to the daemon and the webview
// (media/chat.js).

import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { inertLine, inertText } from './inert';
import { linkTarget, renderMarkdown } from './markdown';
import type { AgentCommand, AgentUpdate, ProposedChange } from './protocol';
import { compactDiff, type DiffLine } from './reviewModel';

export { escapeHtml, renderMarkdown } from './markdown';

// ---- the chat ---------------------------------------------------------------------

/** A tool call's ACP status. */
export type ToolStatus = 'pending' | 'in_progress' | 'completed' | 'failed' | string;

/** A step of the agent's plan (an ACP plan entry): the model's words. */
export interface PlanStep {
  content: string;
  status: 'pending' | 'in_progress' | 'completed' | string;
}

export type Entry =
  | { kind: 'user'; text: string }
  | { kind: 'agent'; text: string }
  | { kind: 'thought'; text: string }
  | { kind: 'output'; text: string }
  | {
      kind: 'tool';
      toolCallId: string;
      /** The call in words ("Wrote notes.txt, 5 bytes"): nexusd's summary. */
      title: string;
      toolKind: string;
      status: ToolStatus;
      /** The head of its result (or its error), as the daemon sent it. */
      detail: string;
      /** Its arguments as JSON text ('' when not sent). */
      input: string;
      /** The workspace file it works on, if any (a relative path). */
      path: string;
      /** The change it would make, kept once seen while it waited, so
       * that its card still shows it after the answer; then, once it
       * completed, the change it made (its checkpoint's, from the update),
       * with how many more files it changed. */
      changes?: readonly ProposedChange[];
      moreChanges?: number;
      /** The task call of the subagent that made this call, shown under it. */
      parent?: string;
    }
  | { kind: 'plan'; steps: PlanStep[] }
  | { kind: 'stop'; text: string }
  | { kind: 'error'; text: string };

export interface ChatState {
  sessionId: string | undefined;
  title: string;
  entries: Entry[];
  commands: AgentCommand[];
  running: boolean;
  /** "12.3k tokens · $0.01", from usage_update. */
  usage: string;
}

export function emptyChat(): ChatState {
  return { sessionId: undefined, title: '', entries: [], commands: [], running: false, usage: '' };
}

function text(content: unknown): string {
  if (typeof content === 'object' && content !== null && (content as { type?: unknown }).type === 'image') {
    // An image an ACP editor sent with a prompt: named, not shown.
    return ` [image, ${String((content as { mimeType?: unknown }).mimeType ?? 'unknown type')}]`;
  }
  if (typeof content === 'object' && content !== null && typeof (content as { text?: unknown }).text === 'string') {
    return (content as { text: string }).text;
  }
  return '';
}

/** toolText is the text of a tool call's content ([{type, content: {text}}]). */
function toolText(content: unknown): string {
  if (!Array.isArray(content)) {
    return '';
  }
  return content.map((c: unknown) => text((c as { content?: unknown })?.content)).filter(Boolean).join('\n');
}

/** prettyJSON is a value as indented JSON; a JSON text (a result's head)
 * is indented when it parses, else kept as it is. */
export function prettyJSON(v: unknown): string {
  if (typeof v === 'string') {
    try {
      return JSON.stringify(JSON.parse(v), null, 2);
    } catch {
      return v;
    }
  }
  return JSON.stringify(v, null, 2) ?? '';
}

/** appendText adds a chunk to the last entry of that kind, or a new one. */
function appendText(s: ChatState, kind: 'user' | 'agent' | 'thought' | 'output', chunk: string): void {
  const last = s.entries[s.entries.length - 1];
  if (last && last.kind === kind) {
    last.text += chunk;
  } else {
    s.entries.push({ kind, text: chunk });
  }
}

export function findTool(s: ChatState, toolCallId: string): Extract<Entry, { kind: 'tool' }> | undefined {
  for (const e of s.entries) {
    if (e.kind === 'tool' && e.toolCallId === toolCallId) {
      return e;
    }
  }
  return undefined;
}

function formatTokens(n: number): string {
  return n >= 1000 ? `${(n / 1000).toFixed(1)}k` : String(n);
}

/** planSteps reads an ACP plan update's entries; anything else is left out. */
function planSteps(entries: unknown): PlanStep[] {
  if (!Array.isArray(entries)) {
    return [];
  }
  return entries
    .filter((e): e is { content: string; status?: unknown } => typeof e === 'object' && e !== null && typeof (e as { content?: unknown }).content === 'string')
    .map((e) => ({ content: e.content, status: typeof e.status === 'string' ? e.status : 'pending' }));
}

/** setPlan shows a plan update: each update is the whole plan, so it
 * replaces the plan of the current turn (the entry after the person's last
 * message) in place, or starts one there. A plan of an earlier turn stays
 * as it was then. */
function setPlan(s: ChatState, steps: PlanStep[]): void {
  for (let i = s.entries.length - 1; i >= 0; i--) {
    const e = s.entries[i];
    if (e.kind === 'user') {
      break;
    }
    if (e.kind === 'plan') {
      e.steps = steps;
      return;
    }
  }
  s.entries.push({ kind: 'plan', steps });
}

/** madeChanges reads a completed call's changes (the files it changed,
 * from its checkpoint): the diffs, not the contents; anything not of
 * their shape is left out. */
function madeChanges(changes: unknown): ProposedChange[] {
  if (!Array.isArray(changes)) {
    return [];
  }
  return changes
    .filter((c): c is ProposedChange => typeof c === 'object' && c !== null && typeof c.path === 'string' && typeof c.action === 'string')
    .map(({ path, action, diff, binary, truncated }) => ({ path, action, diff: typeof diff === 'string' ? diff : '', binary: binary === true, truncated: truncated === true }));
}

/** reduce applies one nexus/agent/update of the session to the state. */
export function reduce(s: ChatState, u: AgentUpdate): ChatState {
  switch (u.sessionUpdate) {
    case 'user_message_chunk':
      appendText(s, 'user', text(u.content));
      break;
    case 'agent_message_chunk':
      appendText(s, 'agent', text(u.content));
      break;
    case 'agent_thought_chunk':
      appendText(s, 'thought', text(u.content));
      break;
    case 'command_output':
      appendText(s, 'output', text(u.content));
      break;
    case 'tool_call':
    case 'tool_call_update': {
      const id = u.toolCallId ?? '';
      let t = findTool(s, id);
      if (!t) {
        t = { kind: 'tool', toolCallId: id, title: u.title || 'tool call', toolKind: u.kind ?? '', status: u.status ?? 'pending', detail: '', input: '', path: '' };
        s.entries.push(t);
      }
      if (u.parentToolCallId) {
        t.parent = u.parentToolCallId;
      }
      if (u.rawInput !== undefined && u.rawInput !== null) {
        t.input = prettyJSON(u.rawInput);
      }
      const loc = Array.isArray(u.locations) ? (u.locations[0] as { path?: unknown } | undefined) : undefined;
      if (loc && typeof loc.path === 'string') {
        t.path = loc.path;
      }
      if (u.title) {
        t.title = u.title;
      }
      if (u.kind) {
        t.toolKind = u.kind;
      }
      if (u.status) {
        t.status = u.status;
      }
      const detail = toolText(u.content);
      if (detail) {
        t.detail = detail;
      }
      const made = madeChanges(u.changes);
      if (made.length > 0) {
        // What it wrote, whether or not the person was asked about it.
        t.changes = made;
        t.moreChanges = typeof u.moreChanges === 'number' && u.moreChanges > 0 ? u.moreChanges : undefined;
      }
      break;
    }
    case 'plan':
      setPlan(s, planSteps(u.entries));
      break;
    case 'available_commands_update':
      s.commands = Array.isArray(u.availableCommands) ? (u.availableCommands as AgentCommand[]) : [];
      break;
    case 'usage_update': {
      const use = u.usage as { inputTokens?: number; outputTokens?: number } | undefined;
      const cost = u.cost as { amount?: number; currency?: string } | undefined;
      const parts: string[] = [];
      if (typeof u.used === 'number' && u.used > 0) {
        parts.push(`${formatTokens(u.used)}${typeof u.size === 'number' && u.size > 0 ? ` / ${formatTokens(u.size)}` : ''} tokens`);
      } else if (use) {
        parts.push(`${formatTokens((use.inputTokens ?? 0) + (use.outputTokens ?? 0))} tokens`);
      }
      if (cost && typeof cost.amount === 'number' && cost.amount > 0) {
        parts.push(`${cost.amount.toFixed(4)} ${cost.currency ?? ''}`.trim());
      }
      s.usage = parts.join(' · ');
      break;
    }
    case 'retry': {
      const r = u.retry as { attempt?: number; waitMs?: number; error?: string } | undefined;
      s.entries.push({ kind: 'error', text: `retry ${r?.attempt ?? ''} in ${((r?.waitMs ?? 0) / 1000).toFixed(1)} s: ${r?.error ?? ''}` });
      break;
    }
    default:
      break;
  }
  return s;
}

/** endTurn records the end of a turn: its stop reason, unless it simply ended. */
export function endTurn(s: ChatState, stopReason: string): void {
  s.running = false;
  s.entries.push({ kind: 'stop', text: `(${stopReason || 'end_turn'})` });
}

/** The HTML of each answer as last rendered: the state is posted on every
 * chunk, and only the answer that grows is rendered again. */
const renderedHTML = new WeakMap<Entry, { text: string; html: string }>();

function rendered(e: Entry, text: string): string {
  const r = renderedHTML.get(e);
  if (r?.text === text) {
    return r.html;
  }
  const html = renderMarkdown(text);
  renderedHTML.set(e, { text, html });
  return html;
}

/** The webview's copy of an entry: the agent's text rendered, and whether a
 * tool call waits for the person, with what its prompt says (who asks, the
 * command, what "always" covers), shown on the card above its answers. */
export type ViewEntry = Entry & { html?: string; waiting?: boolean; prompt?: string; diff?: DiffLine[]; link?: string };

export interface ViewState {
  sessionId: string | undefined;
  title: string;
  entries: ViewEntry[];
  commands: AgentCommand[];
  running: boolean;
  usage: string;
}

/** view is what the webview gets: entries with the agent's markdown rendered
 * and waiting marks the calls in waiting (their tool call ids, each with
 * its prompt's text: approvalsModel.promptDetail, inert), each with the
 * compact diff of the change it would make (changes, by tool call id:
 * reviewModel.compactDiff); an answered call keeps the diff of the change
 * it was asked about, and a completed one shows the change it made (its
 * entry's changes), asked or not. Every text is inert
 * (src/inert.ts): what a model, a tool or a server wrote shows its
 * control, bidi and format characters escaped. The agent's answer and
 * thoughts stay markdown, rendered by markdown.ts's renderMarkdown, which
 * escapes all HTML and links only to the web and to workspace files (the
 * webview posts a link's target; chat.ts checks it); everything else the
 * webview sets as plain text. */
export function view(
  s: ChatState,
  waiting: ReadonlySet<string> | ReadonlyMap<string, string>,
  changes?: ReadonlyMap<string, readonly ProposedChange[]>,
): ViewState {
  return {
    sessionId: s.sessionId,
    title: inertLine(s.title),
    commands: s.commands,
    running: s.running,
    usage: s.usage,
    entries: s.entries.map((e): ViewEntry => {
      if (e.kind === 'agent' || e.kind === 'thought') {
        const text = inertText(e.text);
        return { ...e, text, html: rendered(e, text) };
      }
      if (e.kind === 'tool') {
        const prompt = waiting instanceof Map ? (waiting as ReadonlyMap<string, string>).get(e.toolCallId) : undefined;
        // The change asked about while it waits; after, the one kept then.
        const asked = waiting.has(e.toolCallId) ? changes?.get(e.toolCallId) : undefined;
        const diff = compactDiff(asked ?? e.changes);
        if (!asked && e.moreChanges) {
          diff.push({ text: `… and ${e.moreChanges} more files changed`, kind: 'meta' });
        }
        return {
          ...e,
          changes: undefined,
          moreChanges: undefined,
          title: inertLine(e.title),
          toolKind: inertLine(e.toolKind),
          status: inertLine(e.status),
          detail: inertText(prettyJSON(e.detail)),
          input: inertText(e.input),
          path: inertLine(e.path),
          // The file, for its card's link (a workspace path only).
          link: linkTarget(e.path)?.kind === 'file' ? e.path : undefined,
          waiting: waiting.has(e.toolCallId),
          prompt,
          diff: diff.length > 0 ? diff : undefined,
        };
      }
      if (e.kind === 'plan') {
        return { ...e, steps: e.steps.map((p) => ({ content: inertLine(p.content), status: inertLine(p.status) })) };
      }
      return { ...e, text: inertText(e.text) };
    }),
  };
}

/** insideFolder is the real path of rel under root, or why it may not be
 * opened: it is missing, not a file, or its real path (links followed) is
 * outside root. */
export async function insideFolder(root: string, rel: string): Promise<string | { error: string }> {
  const shown = inertLine(rel);
  let realRoot: string;
  let real: string;
  try {
    realRoot = await fs.realpath(root);
    real = await fs.realpath(path.resolve(realRoot, rel));
  } catch {
    return { error: `${shown} is not a file of the workspace folder.` };
  }
  const r = path.relative(realRoot, real);
  if (r === '' || r === '..' || r.startsWith(`..${path.sep}`) || path.isAbsolute(r)) {
    return { error: `${shown} is outside the workspace folder: the chat opens only its files.` };
  }
  if (!(await fs.stat(real)).isFile()) {
    return { error: `${shown} is not a file.` };
  }
  return real;
}
