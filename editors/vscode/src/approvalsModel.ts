// The models of the Pending Approvals and Remembered Answers views, without
// VS Code: the permission requests waiting for the person, and the "always"
// answers the daemon remembers. approvals.ts shows them.

import type { Approval, PermissionAnswer, PermissionParams } from './protocol';
import { inertLine, inertText, noLinks } from './inert';
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

/** How long a prompt's line may be: VS Code cuts a notification's message
 * at 1,000 characters without saying so; the prompt cuts it first, and
 * says so. */
export const MAX_PROMPT_MESSAGE = 900;

/** asker is who asks, as the daemon says it (ICERC asker), else the call's
 * author or app; inert. */
function asker(p: PermissionParams): string {
  const by = p.toolCall.author || (p.toolCall.appId ? `app:${p.toolCall.appId}` : '');
  return inertLine(p.icerc.asker || by) || 'a party the daemon did not name';
}

function toolOf(p: PermissionParams): string {
  return inertLine(p.toolCall.serverName ? `${p.toolCall.serverName}/${p.toolCall.toolName}` : p.toolCall.toolName);
}

/** alwaysText says what an "always" answer would remember, or that it
 * counts once. */
function alwaysText(p: PermissionParams): string {
  return p.icerc.always ? `"Always" remembers: ${inertLine(p.icerc.always)}` : '"Always" counts once here: nothing is remembered';
}

/**
 * promptMessage is the one line of a permission prompt, all a VS Code
 * notification shows: who asks, the tool and the command as Nexus renders
 * it, what "always" covers, then the intent in the caller's words. It is
 * plain text: inert (a line break in the command shows as \n, since a
 * notification joins lines), with no link the notification would make,
 * and cut with a note when longer than MAX_PROMPT_MESSAGE.
 */
export function promptMessage(p: PermissionParams): string {
  const command = inertLine(p.icerc.command);
  const head = `Nexus: ${asker(p)} asks to run ${toolOf(p)}: `;
  const tail = ` — ${alwaysText(p)}.`;
  const intent = inertLine(p.icerc.intent || p.toolCall.icerc?.intent);
  const words = intent ? ` In the caller's words: "${intent}"` : '';
  let msg = head + command + tail + words;
  if (msg.length > MAX_PROMPT_MESSAGE) {
    const room = Math.max(0, MAX_PROMPT_MESSAGE - head.length - tail.length - 80);
    msg = command.length > room
      ? `${head}${command.slice(0, room)}… (the command goes on for ${command.length - room} more characters: see it in Pending Approvals)${tail}`
      : (head + command + tail).slice(0, MAX_PROMPT_MESSAGE);
  }
  return noLinks(msg);
}

/** promptDetail is the whole ICERC record as plain, inert text, for a
 * modal prompt's detail and the Pending Approvals tooltip: who asks, the
 * command a line at a time, the risk, what "always" covers, and the
 * caller's words, labelled as such. */
export function promptDetail(p: PermissionParams): string {
  const r = p.icerc;
  const lines: string[] = [`Asked by: ${asker(p)}`];
  inertText(r.command)
    .split('\n')
    .forEach((l, i) => lines.push(i === 0 ? `Command: ${l}` : `       | ${l}`));
  if (r.risk?.level) {
    lines.push(`Risk: ${inertLine(r.risk.level)}${r.risk.scope ? ` (${inertLine(r.risk.scope)})` : ''}`);
  }
  for (const d of r.risk?.details ?? []) {
    lines.push(`  - ${inertLine(d)}`);
  }
  lines.push(alwaysText(p));
  lines.push("In the caller's words, not checked by Nexus:");
  lines.push(`  Intent: ${inertLine(r.intent || p.toolCall.icerc?.intent) || '(none)'}`);
  lines.push(`  Expected outcome: ${inertLine(r.expectedOutcome) || '(none)'}`);
  return lines.join('\n');
}

/** promptPick is a request as a quick pick item shows it: the tool, and
 * the command. */
export function promptPick(p: PermissionParams): { label: string; description: string } {
  return { label: toolOf(p), description: inertLine(p.icerc.command) };
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
 * remembered answer: what it covers, for whom, and whether it is broad.
 * The names in it are a server's, an app's or a file's: inert. */
export function rememberedLabel(a: Approval): string {
  return inertLine(a.serverName ? `${a.serverName}/${a.toolName}` : a.toolName);
}

export function rememberedDescription(a: Approval): string {
  return [
    a.decision === 'allow' ? 'always allow' : 'always reject',
    a.appId ? `app:${inertLine(a.appId)}` : 'you and your agents',
    ...(a.broad ? ['BROAD: every call of the tool'] : []),
  ].join(' · ');
}

export function rememberedTooltip(a: Approval): string {
  const who = a.appId ? `app "${inertLine(a.appId)}" and its agent sessions` : 'you and every agent session acting for you';
  const covers = a.covers === undefined ? rememberedLabel(a) : inertLine(a.covers);
  const lines = [`${a.decision === 'allow' ? 'Always allow' : 'Always reject'}: ${covers}`, `For ${who}, since ${inertLine(a.time)}`];
  if (a.broad) {
    lines.push('Broad: remembered before answers had scopes, it covers every command or path of the tool. Revoke it to be asked again.');
  }
  if (a.definitionHash) {
    lines.push(`Definition ${inertLine(a.definitionHash)}`);
  }
  return lines.join('\n');
}
