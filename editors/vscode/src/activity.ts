// The Tool Activity view: the calls of activityModel.ts as a tree, one
// parent per source, refreshed at most once a tick; cancel inline, details
// as a read-only JSON document (nexus-call:), a filter.

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import {
  ActivityModel,
  Coalescer,
  groupOf,
  contextValue,
  describe,
  type Group,
  icon,
  isFinal,
  label,
} from './activityModel';
import type { Daemon } from './daemon';
import { completeStep } from './walkthrough';
import { call, Methods, Notifications, type ToolCall, type ToolsExecuteResult } from './protocol';

type Node = { kind: 'group'; group: Group } | { kind: 'call'; call: ToolCall } | { kind: 'older'; group: Group };

export const CALL_SCHEME = 'nexus-call';

export class ActivityView implements vscode.TreeDataProvider<Node>, vscode.TextDocumentContentProvider, vscode.Disposable {
  readonly model = new ActivityModel();
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly docChanged = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.docChanged.event;
  private readonly countChanged = new vscode.EventEmitter<number>();
  /** The number of running calls changed (for the status bar). */
  readonly onDidChangeRunning = this.countChanged.event;
  private readonly refresh = new Coalescer(() => this.flush());
  private readonly dirtyDocs = new Set<string>();
  private readonly view: vscode.TreeView<Node>;
  private readonly disposables: vscode.Disposable[] = [];
  /** Whether the context key nexus.hasToolCalls (the walkthrough) is set. */
  private hasCalls = false;
  /** A timer that keeps the running calls' durations moving. */
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly daemon: Daemon) {
    this.view = vscode.window.createTreeView('nexus.activity', { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      vscode.workspace.registerTextDocumentContentProvider(CALL_SCHEME, this),
      daemon.onWillStart((c) => this.attach(c)),
      daemon.onDidStart((c) => void this.load(c)),
      vscode.commands.registerCommand('nexus.showCallDetails', (n?: Node | string) => this.showDetails(n)),
      vscode.commands.registerCommand('nexus.cancelCall', (n?: Node | string) => this.cancel(n)),
      vscode.commands.registerCommand('nexus.filterActivity', () => this.askFilter()),
      vscode.commands.registerCommand('nexus.showOlderCalls', (key: string) => this.showOlder(key)),
      this.view.onDidChangeVisibility((e) => e.visible && completeStep('views')),
    );
    this.ticker = setInterval(() => {
      if (this.model.running() > 0) {
        this.refresh.poke();
      }
    }, 1000);
  }

  private attach(client: LanguageClient): void {
    client.onNotification(Notifications.toolCall, (c: ToolCall) => this.update(c));
  }

  private async load(client: LanguageClient): Promise<void> {
    try {
      const r = await call(client, Methods.toolCallsList, { limit: 500 });
      this.model.reset(r.toolCalls ?? []);
      this.refresh.poke();
    } catch (err) {
      this.daemon.output.appendLine(`[nexus] nexus/toolCalls/list: ${String(err)}`);
    }
  }

  /** update records a call's latest state. */
  update(c: ToolCall): void {
    if (this.model.update(c)) {
      this.dirtyDocs.add(c.toolCallId);
      this.refresh.poke();
    }
  }

  /** reply records a nexus/tools/execute reply (its final notification may come later). */
  reply(r: ToolsExecuteResult): void {
    if (this.model.reply(r)) {
      this.dirtyDocs.add(r.toolCallId);
      this.refresh.poke();
    }
  }

  private flush(): void {
    this.changed.fire(undefined);
    this.countChanged.fire(this.model.running());
    for (const id of this.dirtyDocs) {
      this.docChanged.fire(vscode.Uri.from({ scheme: CALL_SCHEME, path: `/${id}.json` }));
    }
    this.dirtyDocs.clear();
    if (!this.hasCalls && this.model.view().some((g) => g.calls.length > 0)) {
      this.hasCalls = true;
      void vscode.commands.executeCommand('setContext', 'nexus.hasToolCalls', true);
      completeStep('activity');
    }
    const f = this.model.getFilter();
    this.view.message = f.text || f.status ? `Filtered: ${[f.status, f.text].filter(Boolean).join(', ')}` : undefined;
  }

  getChildren(n?: Node): Node[] {
    if (!n) {
      return this.model.view().map((group) => ({ kind: 'group', group }));
    }
    if (n.kind === 'group') {
      const nodes: Node[] = n.group.calls.map((c) => ({ kind: 'call', call: c }));
      if (n.group.older > 0) {
        nodes.push({ kind: 'older', group: n.group });
      }
      return nodes;
    }
    return [];
  }

  getTreeItem(n: Node): vscode.TreeItem {
    if (n.kind === 'group') {
      const item = new vscode.TreeItem(n.group.label, vscode.TreeItemCollapsibleState.Expanded);
      item.id = `group:${n.group.key}`;
      const running = n.group.calls.filter((c) => !isFinal(c.status)).length;
      item.description = running ? `${running} running` : `${n.group.calls.length}`;
      item.contextValue = 'group';
      item.iconPath = new vscode.ThemeIcon(n.group.key.startsWith('agent:') ? 'hubot' : n.group.key.startsWith('app:') ? 'package' : n.group.key === 'cli' ? 'terminal' : 'edit');
      return item;
    }
    if (n.kind === 'older') {
      const item = new vscode.TreeItem('older calls…', vscode.TreeItemCollapsibleState.None);
      item.id = `older:${n.group.key}`;
      item.description = `${n.group.older} not shown`;
      item.tooltip = `Only the latest ${n.group.calls.length} calls of this source are kept here: click for the older ones the daemon still holds.`;
      item.contextValue = 'older';
      item.command = { command: 'nexus.showOlderCalls', title: 'Show older calls', arguments: [n.group.key] };
      return item;
    }
    const c = n.call;
    const item = new vscode.TreeItem(label(c), vscode.TreeItemCollapsibleState.None);
    item.id = `call:${c.toolCallId}`;
    item.description = describe(c);
    item.iconPath = new vscode.ThemeIcon(icon(c.status));
    item.contextValue = contextValue(c);
    const tip = new vscode.MarkdownString();
    tip.appendMarkdown(`**${c.serverName ? c.serverName + '/' : ''}${c.toolName}** — ${c.status}\n\n`);
    if (c.icerc?.intent) {
      tip.appendMarkdown(`Intent: ${c.icerc.intent}\n\n`);
    }
    if (c.error) {
      tip.appendMarkdown(`Error: ${c.error.code} ${c.error.message}\n\n`);
    }
    tip.appendMarkdown(`\`${c.toolCallId}\``);
    item.tooltip = tip;
    item.command = { command: 'nexus.showCallDetails', title: 'Show details', arguments: [c.toolCallId] };
    return item;
  }

  /** showOlder opens, as one JSON document, the calls of a source that the
   * view no longer shows and the daemon still holds (its latest 1,000). */
  private async showOlder(key: string): Promise<void> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: CALL_SCHEME, path: `/older/${key}.json` }));
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async olderCalls(key: string): Promise<string> {
    const client = this.daemon.current;
    if (!client) {
      return '// the Nexus daemon is not running\n';
    }
    const shown = new Set(this.model.view().find((g) => g.key === key)?.calls.map((c) => c.toolCallId) ?? []);
    const r = await call(client, Methods.toolCallsList, { limit: 1000 });
    const older = (r.toolCalls ?? []).filter((c) => groupOf(c).key === key && !shown.has(c.toolCallId));
    return JSON.stringify(older, null, 2) + '\n';
  }

  /** provideTextDocumentContent is a call as JSON, its arguments and result
   * parsed; or the older calls of a source (nexus-call:/older/KEY.json). */
  provideTextDocumentContent(uri: vscode.Uri): string | Promise<string> {
    const older = /^\/older\/(.+)\.json$/.exec(uri.path);
    if (older) {
      return this.olderCalls(older[1]);
    }
    const id = uri.path.replace(/^\//, '').replace(/\.json$/, '');
    const c = this.model.get(id);
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
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.from({ scheme: CALL_SCHEME, path: `/${id}.json` }));
    await vscode.languages.setTextDocumentLanguage(doc, 'json');
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  private async cancel(n?: Node | string): Promise<void> {
    const id = this.idOf(n) ?? (await this.pickCall(true));
    const client = this.daemon.current;
    if (!id || !client) {
      return;
    }
    const c = this.model.get(id);
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
    const items = this.model
      .view()
      .flatMap((g) => g.calls)
      .filter((c) => !runningOnly || !isFinal(c.status))
      .map((c) => ({ label: label(c), description: describe(c), id: c.toolCallId }));
    if (items.length === 0) {
      void vscode.window.showInformationMessage(runningOnly ? 'Nexus: no call is running.' : 'Nexus: no tool calls yet.');
      return undefined;
    }
    return (await vscode.window.showQuickPick(items, { placeHolder: 'Tool call' }))?.id;
  }

  private async askFilter(): Promise<void> {
    const f = this.model.getFilter();
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
    this.model.setFilter({ text, status });
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
