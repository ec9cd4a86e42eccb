// The Changes view: what agents, apps and their commands changed in the
// workspace (the daemon's checkpoints), as sessions → turns → calls →
// files, each file opening VS Code's diff editor on what it held before
// and after; Undo and Redo at each level. changesModel.ts builds the tree.

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import { Coalescer } from './activityModel';
import {
  actionLetter,
  type ChangeNode,
  changeTree,
  children,
  contextValue,
  diffTitle,
  isUndoable,
  nodeName,
  plural,
  type SessionNode,
  whatUndo,
} from './changesModel';
import type { Daemon, Daemons } from './daemon';
import { folderItem, type FolderNode, forget, inFolder, roots } from './folders';
import { inertLine } from './inert';
import {
  call,
  type Checkpoint,
  type CheckpointsDiffResult,
  type CheckpointResult,
  type CheckpointUsage,
  isMethodNotFound,
  Methods,
  Notifications,
} from './protocol';

/** The scheme of a file's content before or after a checkpoint:
 * nexus-checkpoint://DAEMON/PATH?id=CHECKPOINT&side=before|after. */
export const CHECKPOINT_SCHEME = 'nexus-checkpoint';
/** The scheme of the view's rows' resourceUri, for their decorations
 * (the SCM view's A/M/D letters; undone rows greyed). */
const ROW_SCHEME = 'nexus-change';
/** How many checkpoints the view lists, newest first. */
const LIMIT = 500;
/** How many checkpoints' diffs are kept for the diff editors. */
const DIFF_CACHE = 20;
/** How many files a confirmation lists. */
const MAX_LISTED = 15;

type Node = FolderNode | { kind: 'change'; daemon: Daemon; node: ChangeNode; session: SessionNode };

/** What the view knows of a daemon: its sessions, or why it has none. */
interface Loaded {
  sessions: SessionNode[];
  usage?: CheckpointUsage;
  listed: number;
  error?: string;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function bytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

/** shortTime is a time of today as its hour and minute, another as its
 * date too. */
function shortTime(iso: string): string {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) {
    return iso;
  }
  const hm = t.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return t.toDateString() === new Date().toDateString() ? hm : `${t.toLocaleDateString()} ${hm}`;
}

/** listed is a confirmation's list of lines, cut at MAX_LISTED. */
function listed(lines: string[]): string {
  const shown = lines.slice(0, MAX_LISTED);
  if (lines.length > shown.length) {
    shown.push(`… and ${lines.length - shown.length} more`);
  }
  return shown.join('\n');
}

export class ChangesView
  implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider, vscode.FileDecorationProvider, vscode.Disposable
{
  private readonly loaded = new Map<string, Loaded>();
  private readonly diffs = new Map<string, Promise<CheckpointsDiffResult>>();
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly decorationsChanged = new vscode.EventEmitter<vscode.Uri[] | undefined>();
  readonly onDidChangeFileDecorations = this.decorationsChanged.event;
  /** A hidden view loads when it shows again. */
  private readonly reload = new Coalescer(() => {
    if (this.view.visible) {
      void this.loadAll();
    } else {
      this.stale = true;
    }
  }, 300);
  private stale = false;
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly daemons: Daemons) {
    this.view = vscode.window.createTreeView('nexus.changes', { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      this.view.onDidChangeVisibility((e) => {
        if (e.visible && this.stale) {
          this.stale = false;
          void this.loadAll();
        }
      }),
      vscode.workspace.registerTextDocumentContentProvider(CHECKPOINT_SCHEME, this),
      vscode.window.registerFileDecorationProvider(this),
      daemons.onWillStart(({ client }) => this.attach(client)),
      daemons.onDidStart(() => this.reload.poke()),
      daemons.onDidChangeState(() => this.reload.poke()),
      daemons.onDidChangeDaemons(() => {
        forget(this.loaded, daemons);
        this.reload.poke();
      }),
      vscode.commands.registerCommand('nexus.refreshChanges', () => this.loadAll()),
      vscode.commands.registerCommand('nexus.openChange', (n?: Node) => this.open(n)),
      vscode.commands.registerCommand('nexus.undoChange', (n?: Node) => this.undo(n)),
      vscode.commands.registerCommand('nexus.redoChange', (n?: Node) => this.redo(n)),
      vscode.commands.registerCommand('nexus.undoLastTurn', () => this.undoLastTurn()),
      vscode.commands.registerCommand('nexus.collectCheckpoints', () => this.gc()),
    );
  }

  private attach(client: LanguageClient): void {
    client.onNotification(Notifications.checkpointsChanged, () => this.reload.poke());
  }

  /** loadAll lists every daemon's checkpoints and the agent sessions'
   * titles, then redraws. */
  private async loadAll(): Promise<void> {
    await Promise.all(this.daemons.list().map((d) => this.load(d)));
    let message: string | undefined;
    let none = this.loaded.size > 0;
    let used = 0;
    let max = 0;
    for (const l of this.loaded.values()) {
      if (l.error) {
        message = l.error;
      } else if (l.usage && l.usage.checkpoints > l.listed) {
        message = `The newest ${l.listed} of ${l.usage.checkpoints} checkpoints are shown.`;
      }
      none &&= l.sessions.length === 0;
      used += l.usage?.bytes ?? 0;
      max += l.usage?.maxBytes ?? 0;
    }
    this.view.message = message ?? (none ? 'No changes yet: what agents, apps and their commands change in the workspace shows here, to review and undo.' : undefined);
    this.view.description = max > 0 ? `${bytes(used)} of ${bytes(max)}` : undefined;
    this.changed.fire(undefined);
    this.decorationsChanged.fire(undefined);
  }

  private async load(d: Daemon): Promise<void> {
    const client = d.current;
    if (!client) {
      this.loaded.delete(d.id);
      return;
    }
    try {
      const [r, titles] = await Promise.all([call(client, Methods.checkpointsList, { limit: LIMIT }), this.titles(client)]);
      const checkpoints = r.checkpoints ?? [];
      this.loaded.set(d.id, { sessions: changeTree(checkpoints, { titles, formatTime: shortTime }), usage: r.usage, listed: checkpoints.length });
    } catch (err) {
      const error = isMethodNotFound(err) ? 'This nexusd records no checkpoints (it is older than the extension).' : `Checkpoints: ${errText(err)}`;
      d.output.appendLine(`[nexus] changes: ${errText(err)}`);
      this.loaded.set(d.id, { sessions: [], listed: 0, error: inFolder(this.daemons, d, error) });
    }
  }

  /** titles are the agent sessions' titles by id; none when the daemon
   * runs no agent. */
  private async titles(client: LanguageClient): Promise<Map<string, string>> {
    try {
      const r = await call(client, Methods.agentSessionsList, {});
      return new Map((r.sessions ?? []).filter((s) => s.title).map((s) => [s.sessionId, s.title]));
    } catch {
      return new Map();
    }
  }

  private top(d: Daemon): Node[] {
    return (this.loaded.get(d.id)?.sessions ?? []).map((s) => ({ kind: 'change', daemon: d, node: s, session: s }));
  }

  getChildren(n?: Node): Node[] {
    if (!n) {
      return roots(this.daemons, (d) => this.top(d)) as Node[];
    }
    if (n.kind === 'folder') {
      return this.top(n.daemon);
    }
    return children(n.node).map((c) => ({ kind: 'change', daemon: n.daemon, node: c, session: n.session }));
  }

  getTreeItem(n: Node): vscode.TreeItem {
    if (n.kind === 'folder') {
      const l = this.loaded.get(n.daemon.id);
      return folderItem('changes', n, l ? plural(l.sessions.length, 'session') : undefined);
    }
    const c = n.node;
    const grey = new vscode.ThemeColor('disabledForeground');
    const undone = c.kind === 'file' ? c.undone : c.kind !== 'skipped' && c.undone === 'all';
    const { None, Collapsed, Expanded } = vscode.TreeItemCollapsibleState;
    const open = c.kind === 'session' || c.kind === 'turn' ? (c.expanded ? Expanded : Collapsed) : c.kind === 'call' ? Collapsed : None;
    const item = new vscode.TreeItem(c.label, open);
    item.description = c.description;
    item.contextValue = contextValue(c);
    const base = `changes:${n.daemon.id}:${encodeURIComponent(n.session.session)}`;
    switch (c.kind) {
      case 'session':
        item.id = base;
        item.tooltip = c.tooltip;
        item.iconPath = new vscode.ThemeIcon(c.session.startsWith('app:') ? 'package' : c.session.startsWith('mcp:') ? 'plug' : 'hubot', undone ? grey : undefined);
        break;
      case 'turn':
        item.id = `${base}:turn:${encodeURIComponent(c.turn)}`;
        item.tooltip = inertLine(`Turn ${c.turn} of session ${c.session}`);
        item.iconPath = new vscode.ThemeIcon('comment-discussion', undone ? grey : undefined);
        break;
      case 'call': {
        const kind = c.checkpoint.kind;
        item.id = `${base}:cp:${c.checkpoint.id}`;
        item.tooltip = c.tooltip;
        item.iconPath = new vscode.ThemeIcon(kind === 'undo' ? 'discard' : kind === 'redo' ? 'redo' : 'tools', undone ? grey : undefined);
        break;
      }
      case 'file':
        item.id = `${base}:cp:${c.checkpoint.id}:file:${encodeURIComponent(c.file.path)}`;
        item.tooltip = inertLine(`${c.file.path} — ${c.file.action}${c.undone ? ', undone' : ''}`);
        item.iconPath = vscode.ThemeIcon.File;
        item.command = { command: 'nexus.openChange', title: 'Open the change', arguments: [n] };
        break;
      case 'skipped':
        item.id = `${base}:cp:${c.checkpoint.id}:skipped:${encodeURIComponent(c.path)}`;
        item.tooltip = `${c.label} — ${c.description}`;
        item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'));
        return item;
    }
    // The decoration: the file's letter, and grey when undone. A file's
    // row keeps its name's extension so that the file icon theme applies.
    const path = c.kind === 'file' ? `/${c.file.path}` : '/';
    const query = new URLSearchParams({ row: item.id ?? '', ...(c.kind === 'file' ? { action: c.file.action } : {}), ...(undone ? { undone: '1' } : {}) });
    item.resourceUri = vscode.Uri.from({ scheme: ROW_SCHEME, authority: n.daemon.id, path, query: query.toString() });
    return item;
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    if (uri.scheme !== ROW_SCHEME) {
      return undefined;
    }
    const q = new URLSearchParams(uri.query);
    const action = q.get('action');
    const undone = q.get('undone') === '1';
    if (!action) {
      return undone ? new vscode.FileDecoration(undefined, 'undone', new vscode.ThemeColor('disabledForeground')) : undefined;
    }
    const color = undone
      ? 'disabledForeground'
      : action === 'added'
        ? 'gitDecoration.addedResourceForeground'
        : action === 'deleted'
          ? 'gitDecoration.deletedResourceForeground'
          : 'gitDecoration.modifiedResourceForeground';
    return new vscode.FileDecoration(actionLetter(action), `${action}${undone ? ', undone' : ''}`, new vscode.ThemeColor(color));
  }

  /** checkpointUri is one side of a file of a checkpoint. */
  private checkpointUri(d: Daemon, c: Checkpoint, path: string, side: 'before' | 'after'): vscode.Uri {
    return vscode.Uri.from({ scheme: CHECKPOINT_SCHEME, authority: d.id, path: `/${path}`, query: new URLSearchParams({ id: c.id, side }).toString() });
  }

  /** diff is a checkpoint's files with both contents; kept for a few
   * checkpoints, as they never change. */
  private diff(d: Daemon, id: string): Promise<CheckpointsDiffResult> {
    const client = d.current;
    if (!client) {
      return Promise.reject(new Error(`the Nexus daemon of ${d.name} is not running`));
    }
    const key = `${d.id}\0${id}`;
    let p = this.diffs.get(key);
    if (!p) {
      p = call(client, Methods.checkpointsDiff, { id });
      p.catch(() => this.diffs.delete(key));
      this.diffs.set(key, p);
      while (this.diffs.size > DIFF_CACHE) {
        this.diffs.delete(this.diffs.keys().next().value as string);
      }
    }
    return p;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const d = this.daemons.get(uri.authority) ?? this.daemons.only;
    const q = new URLSearchParams(uri.query);
    const id = q.get('id') ?? '';
    const path = uri.path.replace(/^\//, '');
    if (!d) {
      throw new Error('no Nexus daemon serves this folder');
    }
    const r = await this.diff(d, id);
    const f = r.files.find((x) => x.path === path);
    if (!f) {
      throw new Error(`checkpoint ${id} did not change ${path}`);
    }
    const before = q.get('side') === 'before';
    // The side where the file was absent is empty; a side that exists
    // comes without text when binary or too large for the editor.
    if (before ? f.action === 'added' : f.action === 'deleted') {
      return '';
    }
    const text = before ? f.before : f.after;
    if (text !== undefined) {
      return text;
    }
    const why = f.binary ? 'a binary file' : f.truncated ? 'too large for the diff editor (over 1 MiB)' : 'not shown';
    return `(${path} is ${why}: nexus checkpoints diff ${id} lists the change)\n`;
  }

  /** open shows a file's change in VS Code's diff editor. */
  private async open(n?: Node): Promise<void> {
    if (n?.kind !== 'change' || n.node.kind !== 'file') {
      return;
    }
    const { checkpoint, file } = n.node;
    await vscode.commands.executeCommand(
      'vscode.diff',
      this.checkpointUri(n.daemon, checkpoint, file.path, 'before'),
      this.checkpointUri(n.daemon, checkpoint, file.path, 'after'),
      diffTitle(checkpoint, file.path),
      { preview: true },
    );
  }

  /** undo takes back what a session, a turn or a call changed, after a
   * modal that names the files; conflicts are shown and nothing changes
   * unless the person says "Undo anyway". */
  private async undo(n?: Node): Promise<void> {
    if (n?.kind !== 'change' || !isUndoable(n.node) || !n.node.actions.undo) {
      return;
    }
    const node = n.node;
    const files = whatUndo(node);
    const name = nodeName(node, node.kind === 'session' ? undefined : n.session);
    const ok = await vscode.window.showWarningMessage(
      inFolder(this.daemons, n.daemon, `Undo ${name}?`),
      { modal: true, detail: `${plural(files.length, 'file')} will be:\n${listed(files)}\n\nThe undo is recorded: Redo brings the changes back.` },
      'Undo',
    );
    if (ok !== 'Undo') {
      return;
    }
    await this.apply(n.daemon, 'Undo', (client, force) => call(client, Methods.checkpointsUndo, { ...node.actions.undo, force }));
  }

  /** redo reverses the undos that took a node's changes back, newest first. */
  private async redo(n?: Node): Promise<void> {
    if (n?.kind !== 'change' || !isUndoable(n.node) || n.node.actions.redo.length === 0) {
      return;
    }
    const node = n.node;
    const name = nodeName(node, node.kind === 'session' ? undefined : n.session);
    const ok = await vscode.window.showWarningMessage(
      inFolder(this.daemons, n.daemon, `Redo the changes of ${name}?`),
      { modal: true, detail: `The ${plural(node.actions.redo.length, 'undo')} that took them back will be reversed; the redo is recorded and can be undone.` },
      'Redo',
    );
    if (ok !== 'Redo') {
      return;
    }
    for (const id of node.actions.redo) {
      if (!(await this.apply(n.daemon, 'Redo', (client, force) => call(client, Methods.checkpointsRedo, { id, force })))) {
        return;
      }
    }
  }

  /** undoLastTurn undoes the last turn of the most recent session, as
   * `nexus undo` does. */
  private async undoLastTurn(): Promise<void> {
    const d = await this.daemons.pick('Undo the last turn in which folder?');
    if (!d?.current) {
      return;
    }
    const ok = await vscode.window.showWarningMessage(
      inFolder(this.daemons, d, 'Undo the last turn of the most recent session?'),
      { modal: true, detail: 'Its files are restored to what they were before it; the undo is recorded: Redo brings the changes back.' },
      'Undo',
    );
    if (ok === 'Undo') {
      await this.apply(d, 'Undo', (client, force) => call(client, Methods.checkpointsUndo, { lastTurn: true, force }));
    }
  }

  /** apply runs an undo or a redo; when files changed since, it lists them
   * in a modal and runs it again with force only on "WHAT anyway". It
   * tells whether it went through. */
  private async apply(d: Daemon, what: 'Undo' | 'Redo', run: (client: LanguageClient, force: boolean) => Promise<CheckpointResult>): Promise<boolean> {
    const client = d.current;
    if (!client) {
      void vscode.window.showErrorMessage(`Nexus: the daemon of ${d.name} is not running.`);
      return false;
    }
    try {
      let r = await run(client, false);
      if (r.conflicts?.length) {
        const anyway = `${what} anyway`;
        const pick = await vscode.window.showWarningMessage(
          inFolder(this.daemons, d, `${plural(r.conflicts.length, 'file')} changed since: nothing was changed.`),
          {
            modal: true,
            detail: `${listed(r.conflicts.map((c) => inertLine(`${c.path}: ${c.reason}`)))}\n\n"${anyway}" overwrites them with what the ${what.toLowerCase()} restores.`,
          },
          anyway,
        );
        if (pick !== anyway) {
          return false;
        }
        r = await run(client, true);
      }
      const n = r.restored?.length ?? 0;
      void vscode.window.showInformationMessage(inFolder(this.daemons, d, `Nexus: ${what.toLowerCase()} restored ${plural(n, 'file')}.`));
      return true;
    } catch (err) {
      void vscode.window.showErrorMessage(inFolder(this.daemons, d, `Nexus: ${what.toLowerCase()} failed: ${inertLine(errText(err))}`));
      return false;
    } finally {
      this.reload.poke();
    }
  }

  /** gc prunes the oldest sessions' checkpoints past the store's cap and
   * compacts it (nexus/checkpoints/gc). */
  private async gc(): Promise<void> {
    const d = await this.daemons.pick('Collect the checkpoints\' garbage of which folder?');
    const client = d?.current;
    if (!d || !client) {
      return;
    }
    try {
      const r = await vscode.window.withProgress({ location: { viewId: 'nexus.changes' } }, () => call(client, Methods.checkpointsGc, {}));
      void vscode.window.showInformationMessage(
        inFolder(this.daemons, d, `Nexus: checkpoints ${bytes(r.bytesBefore)} → ${bytes(r.bytesAfter)}; ${plural(r.pruned, 'checkpoint')} pruned.`),
      );
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: collecting garbage failed: ${errText(err)}`);
    }
    this.reload.poke();
  }

  dispose(): void {
    this.reload.dispose();
    this.changed.dispose();
    this.decorationsChanged.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
