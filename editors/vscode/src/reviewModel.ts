// The review of a proposed write, without VS Code: the change a permission
// question carries (icerc.changes, computed by nexusd) as the chat card's
// compact diff, and as the two sides of VS Code's diff editor, on URIs of
// the read-only scheme nexus-proposed that approvals.ts serves.

import { inertLine } from './inert';
import type { PermissionParams, ProposedChange } from './protocol';

/** The scheme of the two sides of a proposed change in the diff editor. */
export const PROPOSED_SCHEME = 'nexus-proposed';

/** How many lines of diff a chat card shows. */
export const MAX_CARD_DIFF_LINES = 20;

/** A line of a compact diff, and how the card colours it. */
export interface DiffLine {
  text: string;
  kind: 'add' | 'del' | 'hunk' | 'meta';
}

/**
 * compactDiff is the change as a chat card shows it: for each file a line
 * naming the action and the path, then the hunks of its diff (git's header
 * lines left out), at most max lines of diff in all, then "… N more
 * lines". Every line is inert (a tab shown as four spaces), for the
 * webview to set as text.
 */
export function compactDiff(changes: readonly ProposedChange[] | undefined, max = MAX_CARD_DIFF_LINES): DiffLine[] {
  const out: DiffLine[] = [];
  let shown = 0;
  let more = 0;
  for (const c of changes ?? []) {
    out.push({ text: `${inertLine(c.action)} ${inertLine(c.path)}${c.binary ? ' (binary)' : ''}`, kind: 'meta' });
    const diff = (c.diff ?? '').replace(/\n$/, '');
    if (diff === '') {
      if (c.truncated) {
        out.push({ text: '(too large to show a diff)', kind: 'meta' });
      }
      continue;
    }
    let hunks = false;
    for (const l of diff.split('\n')) {
      if (!hunks && !l.startsWith('@@')) {
        continue; // git's headers: the line above names the file
      }
      if (shown === max) {
        more++;
        continue;
      }
      let kind: DiffLine['kind'] = 'meta';
      if (l.startsWith('@@')) {
        hunks = true;
        kind = 'hunk';
      } else if (l.startsWith('+')) {
        kind = 'add';
      } else if (l.startsWith('-')) {
        kind = 'del';
      }
      out.push({ text: inertLine(l.replaceAll('\t', '    ')), kind });
      shown++;
    }
    if (c.binary && !hunks) {
      out.push({ text: 'binary content: no diff to show', kind: 'meta' });
    }
    if (c.truncated && hunks) {
      out.push({ text: '(the diff is cut here: the change is larger)', kind: 'meta' });
    }
  }
  if (more > 0) {
    out.push({ text: `… ${more} more lines`, kind: 'meta' });
  }
  return out;
}

/** The two sides of a proposed change. */
export type Side = 'before' | 'after';

/** A side of a change of a question, as a nexus-proposed URI's path names
 * it: /ID/INDEX/SIDE/PATH (the path last, so the editor takes the file's
 * language from its name). */
export interface ProposedRef {
  /** The local id of the question (PendingApprovals). */
  id: number;
  /** The change's index in icerc.changes. */
  index: number;
  side: Side;
}

/** proposedPath is the path of a nexus-proposed URI. */
export function proposedPath(ref: ProposedRef, filePath: string): string {
  return `/${ref.id}/${ref.index}/${ref.side}/${filePath.replace(/^\/+/, '')}`;
}

/** parseProposed reads a nexus-proposed URI's path; undefined when it is not one. */
export function parseProposed(path: string): ProposedRef | undefined {
  const m = /^\/(\d+)\/(\d+)\/(before|after)\//.exec(path);
  return m ? { id: Number(m[1]), index: Number(m[2]), side: m[3] as Side } : undefined;
}

/** reviewable reports whether a change has a side to show in the diff
 * editor: text on either side, or an added file. */
export function reviewable(c: ProposedChange): boolean {
  return !c.binary && (c.after !== undefined || c.before !== undefined);
}

/** proposedContent is the text of one side of a change: the file now
 * (empty when there is none) or after the call, or a line saying why it is
 * not shown. */
export function proposedContent(c: ProposedChange | undefined, side: Side): string {
  if (!c) {
    return '(this question was answered: the proposed change is no longer open)\n';
  }
  const text = side === 'before' ? c.before : c.after;
  if (text !== undefined) {
    return text;
  }
  if (side === 'before' && c.action === 'added') {
    return '';
  }
  return c.binary ? '(binary content: not shown)\n' : '(over 1 MiB: not shown; the diff is in Pending Approvals)\n';
}

/** How long the asker may be in a diff editor's title. */
const MAX_TITLE_ASKER = 80;

/** A session or call id in an asker, shortened in a title as git
 * shortens a hash: its first eight digits. */
const LONG_ID = /\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** diffTitle is the title of a change's diff editor: the file, who
 * proposes it (an id in it shortened), and how to answer; inert. */
export function diffTitle(p: PermissionParams, c: ProposedChange): string {
  const name = inertLine(c.path.split('/').pop() || c.path);
  let asker = inertLine(p.icerc.asker || p.toolCall.author || (p.toolCall.appId ? `app:${p.toolCall.appId}` : '')).replace(LONG_ID, '$1…') ||
    'a party the daemon did not name';
  if (asker.length > MAX_TITLE_ASKER) {
    asker = `${asker.slice(0, MAX_TITLE_ASKER)}…`;
  }
  return `${name} — proposed by ${asker} (Accept / Reject)`;
}
