// The models of the Pending Approvals and Remembered Answers views, without
// VS Code: the permission requests waiting for the person, and the "always"
// answers the daemon remembers. approvals.ts shows them.

import type { Approval, PermissionAnswer, PermissionParams } from './protocol';

/** The four answers as the person reads them, in the prompt's order. */
export const AnswerLabels: readonly { label: string; answer: PermissionAnswer }[] = [
  { label: 'Allow once', answer: 'allow_once' },
  { label: 'Always allow', answer: 'allow_always' },
  { label: 'Reject', answer: 'reject_once' },
  { label: 'Always reject', answer: 'reject_always' },
];

/** answerOf is the answer of a button label, or undefined. */
export function answerOf(label: string | undefined): PermissionAnswer | undefined {
  return AnswerLabels.find((a) => a.label === label)?.answer;
}

/** promptMessage is the one line of a permission prompt: the tool and the intent. */
export function promptMessage(p: PermissionParams): string {
  const tool = p.toolCall.serverName ? `${p.toolCall.serverName}/${p.toolCall.toolName}` : p.toolCall.toolName;
  const by = p.toolCall.author || (p.toolCall.appId ? `app:${p.toolCall.appId}` : '');
  const intent = p.icerc.intent || p.toolCall.icerc?.intent || 'no intent given';
  return `Nexus: ${by ? by + ' wants to run' : 'run'} ${tool}: ${intent}`;
}

/** promptDetail is the rest of the ICERC record, for the prompt's detail. */
export function promptDetail(p: PermissionParams): string {
  const r = p.icerc;
  const lines: string[] = [];
  if (r.command) {
    lines.push(`Command: ${r.command}`);
  }
  if (r.expectedOutcome) {
    lines.push(`Expected outcome: ${r.expectedOutcome}`);
  }
  if (r.risk?.level) {
    lines.push(`Risk: ${r.risk.level}${r.risk.scope ? ` (${r.risk.scope})` : ''}`);
  }
  for (const d of r.risk?.details ?? []) {
    lines.push(`  - ${d}`);
  }
  return lines.join('\n');
}

/** A permission request waiting for its answer. */
export interface Pending {
  /** A local id, unique for the life of the model. */
  id: number;
  params: PermissionParams;
  received: Date;
  /** Who asked: the id of the daemon (a workspace folder's), if given. */
  source?: string;
}

/** PendingApprovals holds the permission requests not yet answered; each
 * ends answered, or cancelled by the daemon ($/cancelRequest). */
export class PendingApprovals {
  private next = 1;
  private readonly waiting = new Map<number, { pending: Pending; resolve: (a: PermissionAnswer | undefined) => void }>();
  private readonly listeners = new Set<() => void>();

  /** add records a request; the promise is its answer, or undefined when
   * it was cancelled first. */
  add(params: PermissionParams, now: Date = new Date(), source?: string): { pending: Pending; answer: Promise<PermissionAnswer | undefined> } {
    const pending: Pending = { id: this.next++, params, received: now, source };
    const answer = new Promise<PermissionAnswer | undefined>((resolve) => {
      this.waiting.set(pending.id, { pending, resolve });
    });
    this.changed();
    return { pending, answer };
  }

  /** answer answers a request; false when it is no longer waiting. */
  answer(id: number, a: PermissionAnswer): boolean {
    return this.end(id, a);
  }

  /** cancel drops a request the daemon no longer waits for. */
  cancel(id: number): boolean {
    return this.end(id, undefined);
  }

  /** clear cancels every request of a source (its daemon went away), or
   * every request when no source is given. */
  clear(source?: string): void {
    for (const [id, w] of [...this.waiting]) {
      if (source === undefined || w.pending.source === source) {
        this.end(id, undefined);
      }
    }
  }

  private end(id: number, a: PermissionAnswer | undefined): boolean {
    const w = this.waiting.get(id);
    if (!w) {
      return false;
    }
    this.waiting.delete(id);
    w.resolve(a);
    this.changed();
    return true;
  }

  /** byToolCall is the request waiting for the tool call of that id. */
  byToolCall(toolCallId: string): Pending | undefined {
    return this.list().find((p) => p.params.toolCall.toolCallId === toolCallId);
  }

  /** answerToolCall answers the request of a tool call; false when none waits. */
  answerToolCall(toolCallId: string, a: PermissionAnswer): boolean {
    const p = this.byToolCall(toolCallId);
    return p ? this.answer(p.id, a) : false;
  }

  has(id: number): boolean {
    return this.waiting.has(id);
  }

  /** list is the waiting requests, oldest first. */
  list(): Pending[] {
    return [...this.waiting.values()].map((w) => w.pending);
  }

  get size(): number {
    return this.waiting.size;
  }

  onDidChange(fn: () => void): { dispose(): void } {
    this.listeners.add(fn);
    return { dispose: () => this.listeners.delete(fn) };
  }

  private changed(): void {
    for (const fn of this.listeners) {
      fn();
    }
  }
}

/** rememberedLabel and rememberedDescription show one remembered answer. */
export function rememberedLabel(a: Approval): string {
  return a.serverName ? `${a.serverName}/${a.toolName}` : a.toolName;
}

export function rememberedDescription(a: Approval): string {
  return [a.decision === 'allow' ? 'always allow' : 'always reject', a.appId ? `app:${a.appId}` : 'any app'].join(' · ');
}
