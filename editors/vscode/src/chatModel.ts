// The model of the Agent Chat view, without VS Code: a tiny safe markdown
// renderer, and the reducer of one session's nexus/agent/update stream into
// the entries the webview shows. chat.ts wires it to the daemon and the
// webview (media/chat.js).

import { inertLine, inertText } from './inert';
import type { AgentCommand, AgentUpdate, ProposedChange } from './protocol';
import { compactDiff, type DiffLine } from './reviewModel';

// ---- markdown -----------------------------------------------------------------

/** escapeHtml escapes the characters HTML reads specially. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** inline renders code spans, bold and italic of one escaped-on-the-way line. */
function inline(text: string): string {
  const parts = text.split(/(`[^`\n]+`)/);
  return parts
    .map((p, i) => {
      if (i % 2 === 1) {
        return `<code>${escapeHtml(p.slice(1, -1))}</code>`;
      }
      return escapeHtml(p)
        .replace(/\*\*([^*\n]+?)\*\*/g, '<strong>$1</strong>')
        .replace(/__([^_\n]+?)__/g, '<strong>$1</strong>')
        .replace(/(^|[^*\w])\*([^*\n]+?)\*(?!\w)/g, '$1<em>$2</em>')
        .replace(/(^|[^_\w])_([^_\n]+?)_(?!\w)/g, '$1<em>$2</em>');
    })
    .join('');
}

/** renderMarkdown renders the markdown an agent writes — paragraphs, fenced
 * code blocks, inline code, bold, italic, bullet and numbered lists, headings
 * — as HTML. Every character of the text is escaped: it makes no link, image
 * or raw HTML, so its output is safe for innerHTML. */
export function renderMarkdown(md: string): string {
  const lines = md.replace(/\r\n?/g, '\n').split('\n');
  const out: string[] = [];
  let para: string[] = [];
  let list: { tag: 'ul' | 'ol'; items: string[] } | undefined;
  const flushPara = (): void => {
    if (para.length > 0) {
      out.push(`<p>${para.map(inline).join('<br>')}</p>`);
      para = [];
    }
  };
  const flushList = (): void => {
    if (list) {
      out.push(`<${list.tag}>${list.items.map((i) => `<li>${inline(i)}</li>`).join('')}</${list.tag}>`);
      list = undefined;
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = /^\s*(```+|~~~+)\s*([\w+.-]*)/.exec(line);
    if (fence) {
      flushPara();
      flushList();
      const code: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) {
        code.push(lines[i]);
        i++;
      }
      const lang = fence[2] ? ` class="language-${escapeHtml(fence[2])}"` : '';
      out.push(`<pre><code${lang}>${escapeHtml(code.join('\n'))}</code></pre>`);
      continue;
    }
    const bullet = /^\s*[-*+]\s+(.*)$/.exec(line);
    const numbered = /^\s*\d+[.)]\s+(.*)$/.exec(line);
    if (bullet || numbered) {
      flushPara();
      const tag = bullet ? 'ul' : 'ol';
      if (list && list.tag !== tag) {
        flushList();
      }
      list ??= { tag, items: [] };
      list.items.push((bullet ?? numbered)![1]);
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      flushPara();
      flushList();
      const n = Math.min(heading[1].length + 2, 6); // small headings in a side bar
      out.push(`<h${n}>${inline(heading[2])}</h${n}>`);
      continue;
    }
    if (line.trim() === '') {
      flushPara();
      flushList();
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += ' ' + line.trim();
      continue;
    }
    flushList();
    para.push(line);
  }
  flushPara();
  flushList();
  return out.join('');
}

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
      title: string;
      toolKind: string;
      status: ToolStatus;
      detail: string;
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
        t = { kind: 'tool', toolCallId: id, title: u.title || 'tool call', toolKind: u.kind ?? '', status: u.status ?? 'pending', detail: '' };
        s.entries.push(t);
      }
      if (u.parentToolCallId) {
        t.parent = u.parentToolCallId;
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

/** The webview's copy of an entry: the agent's text rendered, and whether a
 * tool call waits for the person, with what its prompt says (who asks, the
 * command, what "always" covers), shown on the card above its answers. */
export type ViewEntry = Entry & { html?: string; waiting?: boolean; prompt?: string; diff?: DiffLine[] };

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
 * reviewModel.compactDiff). Every text
 * is inert (src/inert.ts): what a model, a tool or a server wrote shows its
 * control, bidi and format characters escaped. The agent's answer and
 * thoughts stay markdown, rendered by renderMarkdown, which makes no link,
 * image or HTML of them; everything else the webview sets as plain text. */
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
        return { ...e, text, html: renderMarkdown(text) };
      }
      if (e.kind === 'tool') {
        const prompt = waiting instanceof Map ? (waiting as ReadonlyMap<string, string>).get(e.toolCallId) : undefined;
        return {
          ...e,
          title: inertLine(e.title),
          toolKind: inertLine(e.toolKind),
          status: inertLine(e.status),
          detail: inertText(e.detail),
          waiting: waiting.has(e.toolCallId),
          prompt,
          diff: waiting.has(e.toolCallId) ? compactDiff(changes?.get(e.toolCallId)) : undefined,
        };
      }
      if (e.kind === 'plan') {
        return { ...e, steps: e.steps.map((p) => ({ content: inertLine(p.content), status: inertLine(p.status) })) };
      }
      return { ...e, text: inertText(e.text) };
    }),
  };
}
