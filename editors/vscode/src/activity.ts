// The Tool Activity view: the calls of activityModel.ts as a tree, one
// parent per source (under a node per workspace folder when several are
// served), refreshed at most once a tick; cancel inline, details as a
// read-only JSON document (nexus-call:), a filter.

import * as vscode from 'vscode';
import { inertLine } from './inert';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
  ActivityModel,
  Coalescer,
  groupOf,
  contextValue,
  describe,
  type Filter,
  type Group,
  icon,
  isFinal,
  label,
  normalizeFilter,
  shownStatus,
} from './activityModel';
import type { Daemon, Daemons } from './daemon';
import { folderItem, type FolderNode, forget, roots } from './folders';
import { call, Methods, Notifications, type ToolCall } from './protocol';
import { completeStep } from './walkthrough';

type Node =
  | FolderNode
  | { kind: 'group'; daemon: Daemon; group: Group }
  | { kind: 'call'; daemon: Daemon; call: ToolCall }
  | { kind: 'older'; daemon: Daemon; group: Group };

export const CALL_SCHEME = 'nexus-call';

/** callUri is the read-only JSON document of a call (the authority names
 * the daemon); /older/KEY.json is the older calls of a source. */
function callUri(d: Daemon, name: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CALL_SCHEME, authority: d.id, path: `/${name}.json` });
}

export class ActivityView implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider, vscode.Disposable {
  /** The calls of each daemon, by daemon id. */
  private readonly models = new Map<string, ActivityModel>();
  private filter: Filter = {};
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly countChanged = new vscode.EventEmitter<number>();
  /** The number of running calls changed (for the status bar). */
  readonly onDidChangeRunning = this.countChanged.event;
  private readonly refresh = new Coalescer(() => this.flush());
  private readonly dirtyDocs = new Map<string, vscode.Uri>();
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];
  /** Whether the context key nexus.hasToolCalls (the walkthrough) is set. */
  private hasCalls = false;
  /** A timer that keeps the running calls' durations moving. */
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly daemons: Daemons) {
    this.view = vscode.window.createTreeView('nexus.activity', { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      vscode.workspace.registerTextDocumentContentProvider(CALL_SCHEME, this),
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidStart(({ daemon, client }) => void this.load(daemon, client)),
      daemons.onDidChangeState(() => this.refresh.poke()),
      daemons.onDidChangeDaemons(() => {
        forget(this.models, daemons);
        this.refresh.poke();
      }),
      vscode.commands.registerCommand('nexus.showCallDetails', (n?: Node | string) => this.showDetails(n)),
      vscode.commands.registerCommand('nexus.cancelCall', (n?: Node | string) => this.cancel(n)),
      vscode.commands.registerCommand('nexus.filterActivity', () => this.askFilter()),
      vscode.commands.registerCommand('nexus.showOlderCalls', (key: string, id?: string) => this.showOlder(key, id)),
      this.view.onDidChangeVisibility((e) => e.visible && completeStep('views')),
    );
    this.ticker = setInterval(() => {
      if (this.running() > 0) {
        this.refresh.poke();
      }
    }, 1000);
  }

  /** model is the calls of a daemon. */
  private model(d: Daemon): ActivityModel {
    let m = this.models.get(d.id);
    if (!m) {
      m = new ActivityModel();
      m.setFilter(this.filter);
      this.models.set(d.id, m);
    }
    return m;
  }

  /** running is how many calls run, in every folder. */
  running(): number {
    let n = 0;
    for (const m of this.models.values()) {
      n += m.running();
    }
    return n;
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onNotification(Notifications.toolCall, (c: ToolCall) => {
      if (this.model(d).update(c)) {
        this.dirtyDocs.set(c.toolCallId, callUri(d, c.toolCallId));
        this.refresh.poke();
      }
    });
  }

  private async load(d: Daemon, client: LanguageClient): Promise<void> {
    try {
      const r = await call(client, Methods.toolCallsList, { limit: 500 });
      this.model(d).reset(r.toolCalls ?? []);
      this.refresh.poke();
    } catch (err) {
      d.output.appendLine(`[nexus] nexus/toolCalls/list: ${String(err)}`);
    }
  }

  private flush(): void {
    this.changed.fire(undefined);
    this.countChanged.fire(this.running());
    for (const uri of this.dirtyDocs.values()) {
      this.docChanged.fire(uri);
    }
    this.dirtyDocs.clear();
    if (!this.hasCalls && [...this.models.values()].some((m) => m.view().some((g) => g.calls.length > 0))) {
      this.hasCalls = true;
      void vscode.commands.executeCommand('setContext', 'nexus.hasToolCalls', true);
      completeStep('activity');
    }
    const f = this.filter;
    this.view.message = f.text || f.status ? `Filtered: ${[f.status, f.text].filter(Boolean).join(', ')}` : undefined;
  }

  private groups(d: Daemon): Node[] {
    return this.model(d)
      .view()
      .map((group) => ({ kind: 'group', daemon: d, group }));
  }

  getChildren(n?: Node): Node[] {
    if (!n) {
      return roots(this.daemons, (d) => this.groups(d)) as Node[];
    }
    if (n.kind === 'folder') {
      return this.groups(n.daemon);
    }
    if (n.kind === 'group') {
      const nodes: Node[] = n.group.calls.map((c) => ({ kind: 'call', daemon: n.daemon, call: c }));
      if (n.group.older > 0) {
        nodes.push({ kind: 'older', daemon: n.daemon, group: n.group });
      }
      return nodes;
    }
    return [];
  }

  getTreeItem(n: Node): vscode.TreeItem {
    if (n.kind === 'folder') {
      const running = this.model(n.daemon).running();
      return folderItem('activity', n, running ? `${running} running` : undefined);
    }
    if (n.kind === 'group') {
      const item = new vscode.TreeItem(n.group.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${n.daemon.id}:${n.group.key}`;
      const running = n.group.calls.filter((c) => !isFinal(c.status)).length;
      item.description = running ? `${running} running` : `${n.group.calls.length}`;
      item.contextValue = 'group';
      item.iconPath = new vscode.ThemeIcon(n.group.key.startsWith('agent:') ? 'hubot' : n.group.key.startsWith('app:') ? 'package' : n.group.key === 'cli' ? 'terminal' : 'edit');
      return item;
    }
    if (n.kind === 'older') {
      const item = new vscode.TreeItem('older calls…', vscode.TreeItemCollapsibleState.None);
      item.id = `older:${n.daemon.id}:${n.group.key}`;
      item.description = `${n.group.older} not shown`;
      item.tooltip = `Only the latest ${n.group.calls.length} calls of this source are kept here: click for the older ones the daemon still holds.`;
      item.contextValue = 'older';
      item.command = { command: 'nexus.showOlderCalls', title: 'Show older calls', arguments: [n.group.key, n.daemon.id] };
      return item;
    }
    const c = n.call;
    const item = new vscode.TreeItem(label(c), vscode.TreeItemCollapsibleState.None);
    item.id = `call:${c.toolCallId}`;
    item.description = describe(c);
    item.iconPath = new vscode.ThemeIcon(icon(shownStatus(c)));
    item.contextValue = contextValue(c);
    // What a caller or a server wrote is appended as text (escaped for
    // markdown) and inert: no link, image or HTML is made of it.
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown('**');
    tip.appendText(inertLine(`${c.serverName ? c.serverName + '/' : ''}${c.toolName}`));
    tip.appendMarkdown('**');
    tip.appendText(` — ${inertLine(shownStatus(c))}\n\n`);
    if (c.icerc?.intent) {
      tip.appendText(`Intent, in the caller's words: ${inertLine(c.icerc.intent)}\n\n`);
    }
    if (c.error) {
      tip.appendText(`Error: ${inertLine(c.error.code)} ${inertLine(c.error.message)}\n\n`);
    }
    tip.appendText(inertLine(c.toolCallId));
    item.tooltip = tip;
    if (this.daemons.multi) {
      tip.appendText(` in ${n.daemon.name}`);
    }
    item.command = { command: 'nexus.showCallDetails', title: 'Show details', arguments: [c.toolCallId] };
    return item;
  }

  /** showOlder opens, as one JSON document, the calls of a source that the
   * view no longer shows and the daemon still holds (its latest 1,000). */
  private async showOlder(key: string, id?: string): Promise<void> {
    const d = id ? this.daemons.get(id) : this.daemons.only;
    if (!d) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(callUri(d, `older/${key}`));
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async olderCalls(d: Daemon, key: string): Promise<string> {
    const client = d.current;
    if (!client) {
      return `// the Nexus daemon of ${d.name} is not running\n`;
    }
    const shown = new Set(this.model(d).view().find((g) => g.key === key)?.calls.map((c) => c.toolCallId) ?? []);
    const r = await call(client, Methods.toolCallsList, { limit: 1000 });
    const older = (r.toolCalls ?? []).filter((c) => groupOf(c).key === key && !shown.has(c.toolCallId));
    return JSON.stringify(older, null, 2) + '\n';
  }

  /** find is a call and the daemon whose view holds it. */
  private find(id: string): { daemon: Daemon; call: ToolCall } | undefined {
    for (const d of this.daemons.list()) {
      const c = this.models.get(d.id)?.get(id);
      if (c) {
        return { daemon: d, call: c };
      }
    }
    return undefined;
  }

  /** provideTextDocumentContent is a call as JSON, its arguments and result
   * parsed; or the older calls of a source (nexus-call://D/older/KEY.json). */
  provideTextDocumentContent(uri: vscode.Uri): string | Promise<string> {
    const d = this.daemons.get(uri.authority) ?? this.daemons.only;
    const older = /^\/older\/(.+)\.json$/.exec(uri.path);
    if (older) {
      return d ? this.olderCalls(d, older[1]) : '// no Nexus daemon serves this folder any more\n';
    }
    const id = uri.path.replace(/^\//, '').replace(/\.json$/, '');
    const c = (d && this.models.get(d.id)?.get(id)) ?? this.find(id)?.call;
    if (!c) {
      return `// tool call ${id} is no longer in the Tool Activity view\n`;
    }
    const parse = (s: string | undefined) => {
      if (s === undefined || s === '') {
        return undefined;
      }
      try {
        return JSON.parse(s) as unknown;
      } catch {
        return s;
      }
    };
    return JSON.stringify({ ...c, arguments: parse(c.argumentsJson), result: parse(c.resultJson) }, null, 2) + '\n';
  }

  private idOf(n?: Node | string): string | undefined {
    if (typeof n === 'string') {
      return n;
    }
    if (n?.kind === 'call') {
      return n.call.toolCallId;
    }
    const sel = this.view.selection[0];
    return sel?.kind === 'call' ? sel.call.toolCallId : undefined;
  }

  private async showDetails(n?: Node | string): Promise<void> {
    const id = this.idOf(n) ?? (await this.pickCall(false));
    if (!id) {
      return;
    }
    const found = this.find(id);
    const d = found?.daemon ?? this.daemons.only;
    if (!d) {
      return;
    }
    const doc = await vscode.workspace.openTextDocument(callUri(d, id));
    await vscode.languages.setTextDocumentLanguage(doc, 'json');
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async cancel(n?: Node | string): Promise<void> {
    const id = this.idOf(n) ?? (await this.pickCall(true));
    const found = id ? this.find(id) : undefined;
    const client = found?.daemon.current;
    if (!id || !client) {
      return;
    }
    const c = found.call;
    try {
      const r = await call(client, Methods.toolCallsCancel, { toolCallId: id, appId: c?.appId });
      if (!r.cancelled) {
        void vscode.window.showInformationMessage(`Nexus: ${c ? label(c) : id} had already ended.`);
      }
    } catch (err) {
      void vscode.window.showErrorMessage(`Nexus: cancel failed: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  private async pickCall(runningOnly: boolean): Promise<string | undefined> {
    const items = this.daemons.list().flatMap((d) =>
      this.model(d)
        .view()
        .flatMap((g) => g.calls)
        .filter((c) => !runningOnly || !isFinal(c.status))
        .map((c) => ({ label: label(c), description: describe(c), detail: this.daemons.multi ? d.name : undefined, id: c.toolCallId })),
    );
    if (items.length === 0) {
      void vscode.window.showInformationMessage(runningOnly ? 'Nexus: no call is running.' : 'Nexus: no tool calls yet.');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: 'Tool call' }))?.id;
  }

  private async askFilter(): Promise<void> {
    const f = this.filter;
    const value = await vscode.window.showInputBox({
      prompt: 'Filter the tool calls: text (tool, title, author, intent), and status:NAME for a status. Empty: show all.',
      value: [f.status ? `status:${f.status}` : '', f.text ?? ''].filter(Boolean).join(' '),
    });
    if (value === undefined) {
      return;
    }
    let status: string | undefined;
    const text = value
      .replace(/\bstatus:(\S+)/, (_, s: string) => {
        status = s;
        return '';
      })
      .trim();
    this.filter = normalizeFilter({ text, status });
    for (const m of this.models.values()) {
      m.setFilter(this.filter);
    }
    this.refresh.poke();
  }

  dispose(): void {
    if (this.ticker !== undefined) {
      clearInterval(this.ticker);
    }
    this.refresh.dispose();
    this.changed.dispose();
    this.docChanged.dispose();
    this.countChanged.dispose();
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
