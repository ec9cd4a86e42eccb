// What the tree views share in a multi-root workspace: with more than one
// daemon, each view's top level is a node per workspace folder, as in the
// Explorer; with one, the folder level is left out.

import * as vscode from 'vscode';
import type { Daemon, Daemons } from './daemon';

/** The top-level node of a folder's daemon. */
export interface FolderNode {
  kind: 'folder';
  daemon: Daemon;
}

/** roots is a view's top level: a node per folder when several are
 * served, else the children of the one daemon (none when there is none). */
export function roots<T>(daemons: Daemons, children: (d: Daemon) => T[] | Promise<T[]>): T[] | FolderNode[] | Promise<T[]> {
  if (daemons.multi) {
    return daemons.list().map((daemon): FolderNode => ({ kind: 'folder', daemon }));
  }
  const d = daemons.only;
  return d ? children(d) : [];
}

/** folderItem is the tree item of a folder node; description says what
 * the view holds for it. */
export function folderItem(view: string, n: FolderNode, description?: string): vscode.TreeItem {
  const d = n.daemon;
  const item = new vscode.TreeItem(d.name, vscode.TreeItemCollapsibleState.Expanded);
  item.id = `${view}:folder:${d.id}`;
  item.iconPath = new vscode.ThemeIcon(d.state === 'stopped' ? 'error' : 'root-folder');
  item.description = d.state === 'ready' ? description : d.state === 'stopped' ? `stopped${d.lastFailure ? `: ${d.lastFailure}` : ''}` : 'starting';
  item.tooltip = `${d.folder.uri.fsPath} — nexusd ${d.state}`;
  item.contextValue = `folder.${d.state}`;
  return item;
}

/** inFolder prefixes a message with the folder's name when several are
 * served, so that the person knows which daemon speaks. */
export function inFolder(daemons: Daemons, d: Daemon, text: string): string {
  return daemons.multi ? `[${d.name}] ${text}` : text;
}

/** forget drops, from a map by daemon id, the daemons no longer served. */
export function forget<V>(m: Map<string, V>, daemons: Daemons): void {
  const live = new Set(daemons.list().map((d) => d.id));
  for (const id of m.keys()) {
    if (!live.has(id)) {
      m.delete(id);
    }
  }
}
