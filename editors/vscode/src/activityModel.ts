// The model of the Tool Activity view: every tool call the daemon reports,
// grouped by who started it, without VS Code (test/activity.test.ts drives
// it against the real nexusd). activity.ts shows it as a tree.

import { inertLine } from './inert';
import type { ToolCall, ToolsExecuteResult } from './protocol';

/** How many calls a group keeps; older finished ones are dropped and counted. */
export const MAX_PER_GROUP = 500;

/** The statuses after which a call changes no more. */
const FINAL = new Set(['completed', 'error', 'cancelled', 'denied', 'rejected']);

export function isFinal(status: string): boolean {
  return FINAL.has(status);
}

/** A source of calls: an agent session, an app, the CLI or the editor. */
export interface Group {
  /** A stable key: "agent:<session>", "app:<id>", "cli", "editor", "other". */
  key: string;
  label: string;
  /** Newest first. */
  calls: ToolCall[];
  /** How many older calls were dropped to keep the group bounded. */
  older: number;
}

/** Filter keeps the calls whose text or status matches. */
export interface Filter {
  text?: string;
  status?: string;
}

/** normalizeFilter trims and lower-cases a filter; empty parts are dropped. */
export function normalizeFilter(f: Filter): Filter {
  return { text: f.text?.trim().toLowerCase() || undefined, status: f.status?.trim().toLowerCase() || undefined };
}

/** groupOf is the group key and label of a call, from its author (and appId
 * for daemons that do not send the author); the label is inert. */
export function groupOf(c: ToolCall): { key: string; label: string } {
  const g = rawGroupOf(c);
  return { key: g.key, label: inertLine(g.label) };
}

function rawGroupOf(c: ToolCall): { key: string; label: string } {
  const author = c.author ?? '';
  if (author.startsWith('agent:')) {
    const session = author.slice('agent:'.length);
    return { key: author, label: `Agent session ${session}` };
  }
  if (author.startsWith('app:')) {
    return { key: author, label: `App ${author.slice('app:'.length)}` };
  }
  if (author.startsWith('mcp:')) {
    // An MCP server's sampling requests (SERVER/mcp_sampling).
    return { key: author, label: `MCP server ${author.slice('mcp:'.length)}` };
  }
  if (author === 'cli' || author === 'editor') {
    return { key: author, label: author === 'cli' ? 'CLI' : 'Editor' };
  }
  if (c.appId) {
    return { key: `app:${c.appId}`, label: `App ${c.appId}` };
  }
  if (author) {
    return { key: author, label: author };
  }
  return { key: 'other', label: 'Other' };
}

/** who is the author-or-app part of a call's description. */
export function who(c: ToolCall): string {
  return c.author || (c.appId ? `app:${c.appId}` : '');
}

/** duration formats how long a call ran (until now when it runs still). */
export function duration(c: ToolCall, now: number = Date.now()): string {
  const start = Date.parse(c.startedAt);
  if (Number.isNaN(start)) {
    return '';
  }
  const end = c.endedAt ? Date.parse(c.endedAt) : now;
  const ms = Math.max(0, end - start);
  if (ms < 1000) {
    return `${ms} ms`;
  }
  if (ms < 60_000) {
    return `${(ms / 1000).toFixed(1)} s`;
  }
  const m = Math.floor(ms / 60_000);
  return `${m} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** shownStatus is a call's status as the person reads it: a call that
 * ended in error because it was cancelled (code cancelled) reads
 * "cancelled", one denied by the policy or the person "denied". */
export function shownStatus(c: ToolCall): string {
  if (c.status === 'error' && c.error?.code === 'cancelled') {
    return 'cancelled';
  }
  if (c.status === 'error' && c.error?.code === 'permission_denied') {
    return 'denied';
  }
  return c.status;
}

/** describe is a call's tree item description: status · author-or-app · duration; inert. */
export function describe(c: ToolCall, now?: number): string {
  return inertLine([shownStatus(c), who(c), duration(c, now)].filter((s) => s !== '').join(' · '));
}

/** label is a call's title, or its tool name; inert (an MCP server names
 * its tools). */
export function label(c: ToolCall): string {
  return inertLine(c.title || c.toolName);
}

/** icon is the codicon of a status. */
export function icon(status: string): string {
  switch (status) {
    case 'running':
      return 'loading~spin';
    case 'completed':
      return 'check';
    case 'error':
      return 'error';
    case 'cancelled':
      return 'circle-slash';
    case 'initiated':
      return 'circle-outline';
  }
  return isFinal(status) ? 'circle-slash' : 'circle-outline';
}

/** contextValue is call.running for a call that may still be cancelled, else call.done. */
export function contextValue(c: ToolCall): string {
  return isFinal(c.status) ? 'call.done' : 'call.running';
}

/** ActivityModel keeps the calls by id and by group. */
export class ActivityModel {
  private readonly byId = new Map<string, ToolCall>();
  private readonly groups = new Map<string, Group>();
  private filter: Filter = {};

  constructor(private readonly maxPerGroup = MAX_PER_GROUP) {}

  /** reset replaces everything with the calls of nexus/toolCalls/list. */
  reset(calls: ToolCall[]): void {
    this.byId.clear();
    this.groups.clear();
    // Oldest first, so that each group ends newest first.
    const sorted = [...calls].sort((a, b) => Date.parse(a.startedAt) - Date.parse(b.startedAt));
    for (const c of sorted) {
      this.update(c);
    }
  }

  /** update records a call's latest state (nexus/toolCall). A stale update,
   * one that would take a finished call back to running, is ignored: the
   * final status can arrive before an intermediate one was read. It
   * returns whether anything changed. */
  update(c: ToolCall): boolean {
    const old = this.byId.get(c.toolCallId);
    if (old) {
      if (isFinal(old.status) && !isFinal(c.status)) {
        return false;
      }
      Object.assign(old, c);
      return true;
    }
    const { key, label } = groupOf(c);
    let g = this.groups.get(key);
    if (!g) {
      g = { key, label, calls: [], older: 0 };
      this.groups.set(key, g);
    }
    const call = { ...c };
    this.byId.set(c.toolCallId, call);
    g.calls.unshift(call);
    this.trim(g);
    return true;
  }

  /** reply records what the nexus/tools/execute reply says of a call that
   * its notifications have not finished yet. */
  reply(r: ToolsExecuteResult, now: Date = new Date()): boolean {
    const c = this.byId.get(r.toolCallId);
    if (!c || isFinal(c.status)) {
      return false;
    }
    c.status = r.success ? 'completed' : 'error';
    c.endedAt ??= now.toISOString();
    if (r.outputJson !== undefined) {
      c.resultJson = r.outputJson;
    }
    if (!r.success) {
      c.error ??= { code: r.errorCode ?? '', message: r.message ?? '' };
    }
    return true;
  }

  /** trim drops a group's oldest finished calls beyond the bound. */
  private trim(g: Group): void {
    for (let i = g.calls.length - 1; g.calls.length > this.maxPerGroup && i >= 0; i--) {
      const c = g.calls[i];
      if (isFinal(c.status)) {
        g.calls.splice(i, 1);
        this.byId.delete(c.toolCallId);
        g.older++;
      }
    }
  }

  get(id: string): ToolCall | undefined {
    return this.byId.get(id);
  }

  /** running is how many calls have not finished. */
  running(): number {
    let n = 0;
    for (const c of this.byId.values()) {
      if (!isFinal(c.status)) {
        n++;
      }
    }
    return n;
  }

  setFilter(f: Filter): void {
    this.filter = normalizeFilter(f);
  }

  getFilter(): Filter {
    return this.filter;
  }

  /** matches tells whether a call passes the filter. */
  matches(c: ToolCall): boolean {
    const { text, status } = this.filter;
    if (status && c.status.toLowerCase() !== status && shownStatus(c) !== status) {
      return false;
    }
    if (text) {
      const hay = [c.toolName, c.title, c.serverName, c.author, c.appId, shownStatus(c), c.icerc?.intent, c.toolCallId]
        .filter(Boolean)
        .join('\n')
        .toLowerCase();
      return hay.includes(text);
    }
    return true;
  }

  /** view is the groups as the tree shows them: filtered, groups with the
   * newest call first. */
  view(): Group[] {
    const out: Group[] = [];
    for (const g of this.groups.values()) {
      const calls = g.calls.filter((c) => this.matches(c));
      if (calls.length > 0 || (!this.filter.text && !this.filter.status)) {
        out.push({ ...g, calls });
      }
    }
    const newest = (g: Group) => (g.calls.length ? Date.parse(g.calls[0].startedAt) : 0);
    return out.sort((a, b) => newest(b) - newest(a));
  }
}

/** Coalescer runs fire at most once per interval, however often it is
 * poked: one tree refresh per tick, not one per notification. */
export class Coalescer {
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly fire: () => void,
    private readonly intervalMs = 100,
  ) {}

  poke(): void {
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.fire();
      }, this.intervalMs);
    }
  }

  dispose(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}
