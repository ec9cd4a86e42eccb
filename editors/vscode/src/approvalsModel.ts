// The models of the Pending Approvals and Remembered Answers views, without
// VS Code: the permission requests waiting for the person, and the "always"
// answers the daemon remembers. approvals.ts shows them.

import type { Approval, PermissionAnswer, PermissionParams } from './protocol';
import { type Waiting, WaitingQueue } from './waiting';

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
export type Pending = Waiting<PermissionParams>;

/** PendingApprovals holds the permission requests not yet answered; each
 * ends answered, or cancelled by the daemon ($/cancelRequest). */
export class PendingApprovals extends WaitingQueue<PermissionParams, PermissionAnswer> {
  /** add records a request; the promise is its answer, or undefined when
   * it was cancelled first. */
  add(params: PermissionParams, now: Date = new Date(), source?: string): { pending: Pending; answer: Promise<PermissionAnswer | undefined> } {
    const { item, answer } = this.push(params, now, source);
    return { pending: item, answer };
  }

  /** cancel drops a request the daemon no longer waits for. */
  cancel(id: number): boolean {
    return this.drop(id);
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
}

/** rememberedLabel, rememberedDescription and rememberedTooltip show one
 * remembered answer: what it covers, for whom, and whether it is broad. */
export function rememberedLabel(a: Approval): string {
  return a.serverName ? `${a.serverName}/${a.toolName}` : a.toolName;
}

export function rememberedDescription(a: Approval): string {
  return [
    a.decision === 'allow' ? 'always allow' : 'always reject',
    a.appId ? `app:${a.appId}` : 'you and your agents',
    ...(a.broad ? ['BROAD: every call of the tool'] : []),
  ].join(' · ');
}

export function rememberedTooltip(a: Approval): string {
  const who = a.appId ? `app "${a.appId}" and its agent sessions` : 'you and every agent session acting for you';
  const lines = [`${a.decision === 'allow' ? 'Always allow' : 'Always reject'}: ${a.covers ?? rememberedLabel(a)}`, `For ${who}, since ${a.time}`];
  if (a.broad) {
    lines.push('Broad: remembered before answers had scopes, it covers every command or path of the tool. Revoke it to be asked again.');
  }
  if (a.definitionHash) {
    lines.push(`Definition ${a.definitionHash}`);
  }
  return lines.join('\n');
}
