// The Definitions view (files, their history, a revision as a read-only
// nexus-def: document, a diff of two revisions) and the MCP Servers view;
// each with a node per workspace folder when several are served.

import path from 'node:path';
import * as vscode from 'vscode';
import type { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import { Coalescer } from './activityModel';
import type { Daemon, Daemons } from './daemon';
import { folderItem, type FolderNode, forget, inFolder, roots } from './folders';
import { inertLine } from './inert';
import { hookText, launchText } from './mcpModel';
import {
  call,
  type DefEntry,
  type HistoryEntry,
  type McpLoginResult,
  type McpServer,
  type McpTrustRequest,
  type HookTrustRequest,
  Methods,
  Notifications,
  Requests,
} from './protocol';

export const DEF_SCHEME = 'nexus-def';

/** defUri is a revision of a definition file of a daemon (the authority);
 * no revision: the latest. */
export function defUri(d: Daemon, path: string, revision?: string): vscode.Uri {
  return vscode.Uri.from({ scheme: DEF_SCHEME, authority: d.id, path: `/${path}`, query: revision ?? '' });
}

type DefNode =
  | FolderNode
  | { kind: 'entry'; daemon: Daemon; entry: DefEntry }
  | { kind: 'revision'; daemon: Daemon; path: string; entry: HistoryEntry; previous?: string };

export class DefinitionsView implements vscode.TreeDataProvider<DefNode>, vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<DefNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly refresh = new Coalescer(() => this.changed.fire(undefined), 300);
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly daemons: Daemons) {
    this.disposables.push(
      vscode.window.createTreeView('nexus.definitions', { treeDataProvider: this, showCollapseAll: true }),
      vscode.workspace.registerTextDocumentContentProvider(DEF_SCHEME, this),
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidStart(() => this.refresh.poke()),
      daemons.onDidChangeDaemons(() => this.refresh.poke()),
      daemons.onDidChangeState(() => this.refresh.poke()),
      vscode.commands.registerCommand('nexus.refreshDefinitions', () => this.changed.fire(undefined)),
      vscode.commands.registerCommand('nexus.openRevision', (path: string, revision?: string, id?: string) => this.open(path, revision, id)),
      vscode.commands.registerCommand('nexus.diffRevisions', (n?: DefNode) => this.diff(n)),
      vscode.commands.registerCommand('nexus.diffWithWorkingFile', (n?: DefNode) => this.diffWorking(n)),
      vscode.commands.registerCommand('nexus.restoreRevision', (n?: DefNode) => this.restore(n)),
    );
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onNotification(Notifications.definitionChanged, (p: { path: string }) => {
      this.docChanged.fire(defUri(d, p.path));
      this.refresh.poke();
    });
  }

  async getChildren(n?: DefNode): Promise<DefNode[]> {
    if (!n) {
      return roots(this.daemons, (d) => this.list(d, ''));
    }
    if (n.kind === 'folder') {
      return this.list(n.daemon, '');
    }
    if (n.kind === 'entry' && n.entry.type === 'DIRECTORY') {
      return this.list(n.daemon, n.entry.path);
    }
    const client = n.daemon.current;
    if (n.kind !== 'entry' || !client) {
      return [];
    }
    try {
      const r = await call(client, Methods.definitionsHistory, { path: n.entry.path, limit: 50 });
      const entries = r.entries ?? [];
      return entries.map((entry, i) => ({ kind: 'revision', daemon: n.daemon, path: n.entry.path, entry, previous: entries[i + 1]?.revision }));
    } catch (err) {
      n.daemon.output.appendLine(`[nexus] definitions: ${String(err)}`);
      return [];
    }
  }

  /** list is a directory of a daemon's definitions root, directories first. */
  private async list(d: Daemon, dir: string): Promise<DefNode[]> {
    const client = d.current;
    if (!client) {
      return [];
    }
    try {
      const r = await call(client, Methods.definitionsList, { path: dir });
      return (r.entries ?? [])
        .sort((a, b) => (a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'DIRECTORY' ? -1 : 1))
        .map((entry) => ({ kind: 'entry', daemon: d, entry }));
    } catch (err) {
      d.output.appendLine(`[nexus] definitions: ${String(err)}`);
      return [];
    }
  }

  getTreeItem(n: DefNode): vscode.TreeItem {
    if (n.kind === 'folder') {
      return folderItem('definitions', n);
    }
    if (n.kind === 'entry') {
      const dir = n.entry.type === 'DIRECTORY';
      const item = new vscode.TreeItem(n.entry.name, vscode.TreeItemCollapsibleState.Collapsed);
      item.id = `def:${n.daemon.id}:${n.entry.path}`;
      item.iconPath = dir ? vscode.ThemeIcon.Folder : vscode.ThemeIcon.File;
      item.resourceUri = vscode.Uri.file(`/${n.entry.path}`);
      item.contextValue = dir ? 'definition.dir' : 'definition.file';
      if (!dir) {
        item.tooltip = `${n.entry.path} (${n.entry.size} bytes): expand for its history`;
      }
      return item;
    }
    const e = n.entry;
    const item = new vscode.TreeItem(e.message.split('\n')[0] || e.revision.slice(0, 12), vscode.TreeItemCollapsibleState.None);
    item.id = `rev:${n.daemon.id}:${n.path}@${e.revision}`;
    item.description = `${e.change.toLowerCase()} · ${e.author} · ${new Date(e.timestamp).toLocaleString()}`;
    item.tooltip = `${e.revision}\n${e.message}`;
    item.iconPath = new vscode.ThemeIcon('git-commit');
    item.contextValue = 'definition.revision';
    item.command = n.previous
      ? { command: 'nexus.diffRevisions', title: 'Diff with previous', arguments: [n] }
      : { command: 'nexus.openRevision', title: 'Open revision', arguments: [n.path, e.revision, n.daemon.id] };
    return item;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const d = this.daemons.get(uri.authority) ?? (uri.authority ? undefined : this.daemons.only);
    const client = d?.current;
    if (!client) {
      throw new Error(d ? `the Nexus daemon of ${d.name} is not running` : 'no Nexus daemon serves this folder');
    }
    const path = uri.path.replace(/^\//, '');
    try {
      const r = await call(client, Methods.definitionsGet, { path, revision: uri.query || undefined });
      return r.content;
    } catch (err) {
      // A revision where the file was deleted has no content.
      return `// ${path}${uri.query ? '@' + uri.query.slice(0, 12) : ''}: ${err instanceof Error ? err.message : String(err)}\n`;
    }
  }

  private async open(path: string, revision?: string, id?: string): Promise<void> {
    const d = id ? this.daemons.get(id) : await this.daemons.pick();
    if (!d) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(defUri(d, path, revision));
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  /** diff shows two revisions of a file side by side: a revision and its
   * previous one, or two picked from the file's history. */
  private async diff(n?: DefNode): Promise<void> {
    const d = n && n.kind !== 'folder' ? n.daemon : await this.daemons.pick();
    const client = d?.current;
    if (!d || !client) {
      return;
    }
    let path: string | undefined;
    let from: string | undefined;
    let to: string | undefined;
    if (n?.kind === 'revision' && n.previous) {
      path = n.path;
      from = n.previous;
      to = n.entry.revision;
    } else {
      path = n?.kind === 'entry' ? n.entry.path : n?.kind === 'revision' ? n.path : await vscode.window.showInputBox({ prompt: 'Definition file path (relative to the definitions root)' });
      if (!path) {
        return;
      }
      const r = await call(client, Methods.definitionsHistory, { path, limit: 100 });
      const picks = (r.entries ?? []).map((e) => ({
        label: e.message.split('\n')[0] || e.revision.slice(0, 12),
        description: `${e.revision.slice(0, 12)} · ${e.author} · ${new Date(e.timestamp).toLocaleString()}`,
        revision: e.revision,
      }));
      if (picks.length < 2) {
        void vscode.window.showInformationMessage(`Nexus: ${path} has fewer than two revisions.`);
        return;
      }
      const a = await vscode.window.showQuickPick(picks, { placeHolder: 'Older revision' });
      if (!a) {
        return;
      }
      const b = await vscode.window.showQuickPick(
        picks.filter((p) => p.revision !== a.revision),
        { placeHolder: 'Newer revision' },
      );
      if (!b) {
        return;
      }
      from = a.revision;
      to = b.revision;
    }
    await vscode.commands.executeCommand('vscode.diff', defUri(d, path, from), defUri(d, path, to), `${path} (${from.slice(0, 7)} ↔ ${to.slice(0, 7)})`);
  }

  /** workingFile is the file of a definition path on disk, in the
   * definitions root the daemon named at initialize. */
  private workingFile(d: Daemon, path: string): vscode.Uri | undefined {
    const root = d.info?.nexus.definitionsRoot;
    return root ? vscode.Uri.joinPath(vscode.Uri.file(root), path) : undefined;
  }

  /** diffWorking shows a revision beside the working file, which may hold
   * edits not yet committed. */
  private async diffWorking(n?: DefNode): Promise<void> {
    if (n?.kind !== 'revision') {
      return;
    }
    const working = this.workingFile(n.daemon, n.path);
    if (!working) {
      void vscode.window.showErrorMessage('Nexus: the daemon did not say where its definitions root is.');
      return;
    }
    await vscode.commands.executeCommand('vscode.diff', defUri(n.daemon, n.path, n.entry.revision), working,
      `${n.path} (${n.entry.revision.slice(0, 7)} ↔ working file)`);
  }

  /** restore makes a revision's content the file's newest, as a new commit
   * by the editor, after showing what changes and asking. */
  private async restore(n?: DefNode): Promise<void> {
    const client = n?.kind === 'revision' ? n.daemon.current : undefined;
    if (n?.kind !== 'revision' || !client) {
      return;
    }
    const short = n.entry.revision.slice(0, 7);
    await vscode.commands.executeCommand('vscode.diff', defUri(n.daemon, n.path), defUri(n.daemon, n.path, n.entry.revision),
      `${n.path} (now ↔ ${short}, to restore)`);
    const ok = await vscode.window.showWarningMessage(
      `Restore ${n.path} to revision ${short}?`,
      { modal: true, detail: `The diff shows what changes: the file becomes "${n.entry.message.split('\n')[0]}" again, as a new commit by the editor. Its history keeps every revision.` },
      'Restore',
    );
    if (ok !== 'Restore') {
      return;
    }
    try {
      const r = await call(client, Methods.definitionsRestore, { path: n.path, revision: n.entry.revision });
      void vscode.window.showInformationMessage(`Nexus: ${n.path} restored to ${short} (new revision ${r.revision.slice(0, 7)}).`);
      this.refresh.poke();
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: restore ${n.path}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  dispose(): void {
    this.refresh.dispose();
    this.changed.dispose();
    this.docChanged.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

type McpNode = FolderNode | { kind: 'server'; daemon: Daemon; server: McpServer };

export class McpView implements vscode.TreeDataProvider<McpNode>, vscode.Disposable {
  /** The servers of each daemon, by daemon id, then by name. */
  private readonly servers = new Map<string, Map<string, McpServer>>();
  /** The servers (daemon id NUL name) already said to need a sign-in. */
  private readonly offered = new Set<string>();
  private readonly changed = new vscode.EventEmitter<McpNode | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly refresh = new Coalescer(() => this.changed.fire(undefined));
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly daemons: Daemons) {
    this.disposables.push(
      vscode.window.createTreeView('nexus.mcp', { treeDataProvider: this }),
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidStart(({ daemon, client }) => void this.load(daemon, client)),
      daemons.onDidChangeState(() => this.refresh.poke()),
      daemons.onDidChangeDaemons(() => {
        forget(this.servers, daemons);
        this.refresh.poke();
      }),
      vscode.commands.registerCommand('nexus.restartMcpServer', (n?: McpNode) => this.restart(n)),
      vscode.commands.registerCommand('nexus.trustMcpServer', (n?: McpNode) => this.trust(n)),
      vscode.commands.registerCommand('nexus.openMcpConfig', (n?: McpNode) => this.openConfig(n)),
      vscode.commands.registerCommand('nexus.signInMcpServer', (n?: McpNode) => this.signIn(n)),
      vscode.commands.registerCommand('nexus.signOutMcpServer', (n?: McpNode) => this.signOut(n)),
    );
  }

  private of(d: Daemon): Map<string, McpServer> {
    let m = this.servers.get(d.id);
    if (!m) {
      m = new Map();
      this.servers.set(d.id, m);
    }
    return m;
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onNotification(Notifications.mcpServerStatus, (s: McpServer) => {
      this.of(d).set(s.name, s);
      this.refresh.poke();
      this.offerSignIn(d, s);
    });
    client.onRequest(Requests.requestMcpTrust, (p: McpTrustRequest, token: CancellationToken) => this.askTrust(d, p, token));
    client.onRequest(Requests.requestHookTrust, (p: HookTrustRequest, token: CancellationToken) => this.askHookTrust(d, p, token));
  }

  /** askHookTrust answers nexus/requestHookTrust: a notification naming the
   * hook, its command line and the files it pins, "Approve" (allow) or
   * "Not now" (reject: the hook keeps waiting, and the calls it guards are
   * denied, until "nexus hooks trust" approves it). */
  private async askHookTrust(d: Daemon, p: HookTrustRequest, token: CancellationToken): Promise<'allow' | 'reject'> {
    const h = p.hook;
    const pick = await Promise.race([
      vscode.window.showWarningMessage(
        inFolder(this.daemons, d, `Nexus: approve the hook ${inertLine(h.name)} of .nexus/config.yaml? It runs: ${inertLine(hookText(h))}`),
        { modal: false },
        'Approve',
        'Not now',
      ),
      new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined))),
    ]);
    return pick === 'Approve' ? 'allow' : 'reject';
  }

  /** askTrust answers nexus/requestMcpTrust: a notification naming the
   * server and what it runs, "Trust" (allow) or "Not now" (reject: the
   * server keeps waiting, and the Trust action of the view approves it). */
  private async askTrust(d: Daemon, p: McpTrustRequest, token: CancellationToken): Promise<'allow' | 'reject'> {
    const s = p.server;
    this.of(d).set(s.name, s);
    this.refresh.poke();
    const from = s.source ? ` (${s.source})` : '';
    const pick = await Promise.race([
      vscode.window.showWarningMessage(
        inFolder(this.daemons, d, `Nexus: trust the MCP server "${s.name}"${from}? It runs: ${launchText(s.launch)}`),
        { modal: false },
        'Trust',
        'Not now',
      ),
      new Promise<undefined>((resolve) => token.onCancellationRequested(() => resolve(undefined))),
    ]);
    return pick === 'Trust' ? 'allow' : 'reject';
  }

  /** offerSignIn says, once each time a server comes to need the person
   * to sign in, that it does, with a Sign in button. */
  private offerSignIn(d: Daemon, s: McpServer): void {
    const key = `${d.id}\0${s.name}`;
    if (s.state !== 'needs_auth') {
      this.offered.delete(key);
      return;
    }
    if (this.offered.has(key)) {
      return;
    }
    this.offered.add(key);
    void vscode.window
      .showInformationMessage(inFolder(this.daemons, d, `Nexus: the MCP server "${s.name}" needs you to sign in.`), 'Sign in')
      .then((pick) => (pick === 'Sign in' ? this.signIn({ kind: 'server', daemon: d, server: this.of(d).get(s.name) ?? s }) : undefined));
  }

  /** signIn signs the person in to an http server (nexus/mcp/login): the
   * daemon has the browser open the sign-in page, and answers once done. */
  private async signIn(n?: McpNode): Promise<void> {
    const t = await this.target(n, (x) => x.transport === 'http', 'MCP server to sign in to');
    const client = t?.daemon.current;
    if (!t || !client) {
      return;
    }
    const name = t.server.name;
    try {
      const r = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `Nexus: signing in to ${name} in your browser…`, cancellable: true },
        (_, token) => client.sendRequest<McpLoginResult>(Methods.mcpLogin, { name }, token),
      );
      this.of(t.daemon).set(r.server.name, r.server);
      this.refresh.poke();
      void vscode.window.showInformationMessage(`Nexus: signed in to ${name}.`);
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: signing in to ${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** signOut deletes a server's tokens (nexus/mcp/logout). */
  private async signOut(n?: McpNode): Promise<void> {
    const t = await this.target(n, (x) => x.transport === 'http', 'MCP server to sign out of');
    const client = t?.daemon.current;
    if (!t || !client) {
      return;
    }
    const name = t.server.name;
    try {
      const r = await call(client, Methods.mcpLogout, { name });
      this.of(t.daemon).set(r.server.name, r.server);
      this.refresh.poke();
      void vscode.window.showInformationMessage(r.signedOut ? `Nexus: signed out of ${name}.` : `Nexus: ${name} had no sign-in.`);
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: signing out of ${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** target is the server a command acts on: the node it was given, or
   * one the person picks. */
  private async target(n: McpNode | undefined, filter: (s: McpServer) => boolean, placeHolder: string): Promise<{ daemon: Daemon; server: McpServer } | undefined> {
    if (n?.kind === 'server') {
      return n;
    }
    const items = this.daemons.list().flatMap((daemon) =>
      [...this.of(daemon).values()].filter(filter).map((server) => ({
        label: server.name,
        description: [server.state, this.daemons.multi ? daemon.name : ''].filter(Boolean).join(' · '),
        t: { daemon, server },
      })),
    );
    if (items.length === 0) {
      void vscode.window.showInformationMessage('Nexus: no such MCP server.');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder }))?.t;
  }

  /** trust approves a server waiting for approval, as it was shown (its pin). */
  private async trust(n?: McpNode): Promise<void> {
    const t = await this.target(n, (x) => x.state === 'pending_approval', 'MCP server to trust');
    const client = t?.daemon.current;
    if (!t || !client) {
      return;
    }
    const target = t.server;
    const ok = await vscode.window.showWarningMessage(
      `Nexus: trust the MCP server "${target.name}"${this.daemons.multi ? ` of ${t.daemon.name}` : ''}?`,
      { modal: true, detail: `It runs: ${launchText(target.launch)}${target.source ? `\nDeclared in ${target.source}` : ''}` },
      'Trust',
    );
    if (ok !== 'Trust') {
      return;
    }
    try {
      const r = await call(client, Methods.mcpTrust, { name: target.name, pin: target.pin });
      this.of(t.daemon).set(r.server.name, r.server);
      this.refresh.poke();
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: trusting ${target.name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  /** openConfig opens the file that declares a server (its source, else
   * .nexus/mcp.json of its folder) at the server's name. */
  private async openConfig(n?: McpNode): Promise<void> {
    const t = await this.target(n, () => true, 'MCP server');
    if (!t) {
      return;
    }
    const target = t.server;
    const rel = target.source || path.join('.nexus', 'mcp.json');
    const file = path.isAbsolute(rel) ? rel : path.join(t.daemon.folder.uri.fsPath, rel);
    try {
      const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
      const text = doc.getText();
      let at = text.indexOf(JSON.stringify(target.name));
      if (at < 0) {
        at = text.search(new RegExp(`(^|\\s)${target.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:`, 'm'));
      }
      const pos = doc.positionAt(Math.max(0, at));
      await vscode.window.showTextDocument(doc, { selection: new vscode.Range(pos, pos) });
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: cannot open ${rel}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async load(d: Daemon, client: LanguageClient): Promise<void> {
    try {
      const r = await call(client, Methods.mcpServers, {});
      this.servers.set(d.id, new Map((r.servers ?? []).map((s) => [s.name, s])));
      for (const s of r.servers ?? []) {
        this.offerSignIn(d, s);
      }
    } catch (err) {
      d.output.appendLine(`[nexus] nexus/mcp/servers: ${String(err)}`);
    }
    this.refresh.poke();
  }

  private async restart(n?: McpNode): Promise<void> {
    const t = await this.target(n, () => true, 'MCP server');
    const client = t?.daemon.current;
    if (!t || !client) {
      return;
    }
    const name = t.server.name;
    try {
      await call(client, Methods.mcpRestart, { name });
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: restart of ${name} failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private list(d: Daemon): McpNode[] {
    return [...this.of(d).values()].sort((a, b) => a.name.localeCompare(b.name)).map((server) => ({ kind: 'server', daemon: d, server }));
  }

  getChildren(n?: McpNode): McpNode[] {
    if (!n) {
      return roots(this.daemons, (d) => this.list(d)) as McpNode[];
    }
    return n.kind === 'folder' ? this.list(n.daemon) : [];
  }

  getTreeItem(n: McpNode): vscode.TreeItem {
    if (n.kind === 'folder') {
      const count = this.of(n.daemon).size;
      return folderItem('mcp', n, `${count} server${count === 1 ? '' : 's'}`);
    }
    const s = n.server;
    const item = new vscode.TreeItem(s.name, vscode.TreeItemCollapsibleState.None);
    item.id = `mcp:${n.daemon.id}:${s.name}`;
    item.description = [s.state, s.transport, `${s.toolCount} tools`].filter(Boolean).join(' · ');
    item.tooltip = [s.error, s.launch ? launchText(s.launch) : '', s.source]
      .filter(Boolean)
      .join('\n');
    const icons: Record<string, string> = { ready: 'pass', failed: 'error', pending_approval: 'shield', starting: 'loading~spin', disabled: 'circle-slash', needs_auth: 'key' };
    item.iconPath = new vscode.ThemeIcon(icons[s.state] ?? 'circle-outline');
    // mcp.<state>, and .http for a server one may sign in to.
    item.contextValue = `mcp.${s.state}${s.transport === 'http' ? '.http' : ''}`;
    return item;
  }

  dispose(): void {
    this.refresh.dispose();
    this.changed.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
