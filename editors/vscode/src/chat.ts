// The Agent Chat view (nexus.chat): a webview (media/chat.js, chat.css) on
// the daemons' agents — nexus/agent/sessions/*, nexus/agent/prompt and
// cancel, the nexus/agent/update stream — with the permission requests of
// the session's own tool calls answered inline on their cards. A session
// belongs to one workspace folder's daemon; with several folders, the
// session list names them and a folder picker says where "New" starts one.

import * as vscode from 'vscode';
import type { LanguageClient } from 'vscode-languageclient/node';
import type { ApprovalsView } from './approvals';
import { promptDetail } from './approvalsModel';
import { type ChatState, emptyChat, endTurn, findTool, insideFolder, reduce, view } from './chatModel';
import type { Daemon, Daemons } from './daemon';
import { forget } from './folders';
import {
  type AgentSessionInfo,
  type AgentUpdateParams,
  call,
  isMethodNotFound,
  Methods,
  Notifications,
  type PermissionAnswer,
  PermissionAnswers,
  type ProposedChange,
} from './protocol';
import { inertLine } from './inert';
import { linkTarget } from './markdown';
import { pageHTML, pageOptions } from './webview';

/** Messages from the webview. */
type FromView =
  | { type: 'ready' }
  | { type: 'prompt'; text: string }
  | { type: 'cancel' }
  | { type: 'newSession' }
  | { type: 'listSessions' }
  | { type: 'loadSession'; sessionId: string }
  | { type: 'folder'; id: string }
  | { type: 'answer'; toolCallId: string; answer: string }
  | { type: 'details'; toolCallId: string }
  | { type: 'openDiff'; toolCallId: string }
  | { type: 'openLink'; href: string };

function errText(err: unknown): string {
  if (isMethodNotFound(err)) {
    return 'This nexusd has no agent (nexus/agent/* methods): configure llm in .nexus/config.yaml.';
  }
  return err instanceof Error ? err.message : String(err);
}

/** sessionKey names a session in the webview: its daemon and its id. */
function sessionKey(d: Daemon, sessionId: string): string {
  return `${d.id}/${sessionId}`;
}

export class ChatView implements vscode.WebviewViewProvider, vscode.Disposable {
  private webview: vscode.Webview | undefined;
  private state: ChatState = emptyChat();
  /** The daemon of the session shown (and where "New" starts one). */
  private daemon: Daemon | undefined;
  /** The sessions of each daemon, by daemon id. */
  private readonly sessions = new Map<string, AgentSessionInfo[]>();
  /** The folder the person picked for the next "New" (several folders). */
  private nextFolder: string | undefined;
  private flushTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly daemons: Daemons,
    private readonly approvals: ApprovalsView,
  ) {
    this.disposables.push(
      vscode.window.registerWebviewViewProvider('nexus.chat', this, { webviewOptions: { retainContextWhenHidden: true } }),
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidStart(({ daemon }) => {
        // A new daemon: the turn that ran is gone; keep the session to resume.
        if (daemon === this.target() && this.state.running) {
          endTurn(this.state, 'daemon restarted');
        }
        void this.listSessions(daemon);
        this.post();
      }),
      daemons.onDidChangeDaemons(() => {
        forget(this.sessions, daemons);
        if (this.daemon && !daemons.get(this.daemon.id)) {
          // Its folder left the workspace.
          this.daemon = undefined;
          this.state = emptyChat();
          this.post();
        }
        this.postSessions();
      }),
      approvals.onDidChangePending(() => this.syncApprovals()),
    );
  }

  /** target is the daemon of the session shown, else the first one. */
  private target(): Daemon | undefined {
    return this.daemon ?? this.daemons.list()[0];
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onNotification(Notifications.agentUpdate, (p: AgentUpdateParams) => {
      if (d === this.target() && p.sessionId && p.sessionId === this.state.sessionId) {
        reduce(this.state, p.update);
        this.post();
      }
    });
  }

  resolveWebviewView(wv: vscode.WebviewView): void {
    wv.webview.options = pageOptions(this.extensionUri);
    wv.webview.html = pageHTML(wv.webview, this.extensionUri, {
      css: 'chat.css',
      js: 'chat.js',
      title: 'Agent Chat',
      body: `<div id="bar">
  <select id="folder" title="Workspace folder of a new session" hidden></select>
  <select id="sessions" title="Sessions: pick one to resume it"></select>
  <button id="new" title="New session">New</button>
</div>
<div id="log" role="log" aria-live="polite"></div>
<div id="footer">
  <div id="completions" role="listbox" hidden></div>
  <textarea id="prompt" rows="3" placeholder="Ask the agent — Enter sends, Shift+Enter a new line, / for commands"></textarea>
  <div id="actions"><span id="usage"></span><button id="stop" hidden>Stop</button><button id="send">Send</button></div>
</div>`,
    });
    this.webview = wv.webview;
    this.disposables.push(
      wv.webview.onDidReceiveMessage((m: FromView) => void this.onMessage(m)),
      wv.onDidDispose(() => {
        this.webview = undefined;
      }),
    );
  }

  private async onMessage(m: FromView): Promise<void> {
    switch (m.type) {
      case 'ready':
        this.post();
        this.postSessions();
        await this.listSessions();
        break;
      case 'folder':
        // Where "New" starts a session; the one shown stays until then.
        if (this.daemons.get(m.id)) {
          this.nextFolder = m.id;
        }
        break;
      case 'prompt':
        await this.prompt(m.text);
        break;
      case 'cancel':
        await this.cancel();
        break;
      case 'newSession':
        await this.newSession();
        break;
      case 'listSessions':
        await this.listSessions();
        break;
      case 'loadSession': {
        const [id, sessionId] = m.sessionId.split('/', 2);
        const d = this.daemons.get(id);
        if (d && sessionId) {
          await this.loadSession(d, sessionId);
        }
        break;
      }
      case 'answer':
        if ((PermissionAnswers as readonly string[]).includes(m.answer)) {
          if (!this.approvals.answerToolCall(m.toolCallId, m.answer as PermissionAnswer)) {
            this.error('That request is no longer waiting.');
          }
        }
        break;
      case 'details':
        await vscode.commands.executeCommand('nexus.showCallDetails', m.toolCallId);
        break;
      case 'openLink':
        await this.openLink(m.href);
        break;
      case 'openDiff':
        if (!(await this.approvals.openDiffOf(m.toolCallId))) {
          this.error('That request is no longer waiting.');
        }
        break;
    }
  }

  /** openLink follows a link of the chat (the answer's, or a tool card's):
   * a web page opens outside, through VS Code; a file opens in the editor
   * at its line, only when its real path is inside the workspace folder of
   * the session's daemon. Anything else is refused, and says so. */
  private async openLink(href: string): Promise<void> {
    const target = typeof href === 'string' ? linkTarget(href) : undefined;
    if (!target) {
      this.error(`Not a link the chat follows: ${inertLine(String(href)).slice(0, 200)} (only http, https and files of the workspace).`);
      return;
    }
    if (target.kind === 'web') {
      await vscode.env.openExternal(vscode.Uri.parse(target.url, true));
      return;
    }
    const d = this.target();
    if (!d) {
      this.error('No workspace folder to open a file of.');
      return;
    }
    const file = await insideFolder(d.folder.uri.fsPath, target.path);
    if (typeof file !== 'string') {
      this.error(file.error);
      return;
    }
    const line = Math.max(target.line - 1, 0);
    const at = new vscode.Range(line, 0, line, 0);
    try {
      await vscode.window.showTextDocument(vscode.Uri.file(file), { selection: at, preview: true });
    } catch (err) {
      this.error(`Could not open ${inertLine(target.path)}: ${errText(err)}`);
    }
  }

  private client(d: Daemon | undefined = this.target()): LanguageClient | undefined {
    const c = d?.current;
    if (!c) {
      this.error(d ? `The Nexus daemon of ${d.name} is not running.` : 'No Nexus daemon is running.');
    }
    return c;
  }

  private error(text: string): void {
    this.state.entries.push({ kind: 'error', text });
    this.post();
  }

  private async newSession(): Promise<boolean> {
    const d = (this.nextFolder ? this.daemons.get(this.nextFolder) : undefined) ?? this.target();
    const c = this.client(d);
    if (!c || !d) {
      return false;
    }
    if (this.state.running) {
      this.error('A turn is running: stop it first.');
      return false;
    }
    try {
      const r = await call(c, Methods.agentSessionsNew, {});
      this.daemon = d;
      this.nextFolder = undefined;
      this.state = emptyChat();
      this.state.sessionId = r.session.sessionId;
      this.state.title = r.session.title;
      this.state.commands = r.availableCommands ?? [];
      this.post();
      await this.listSessions(d);
      return true;
    } catch (err) {
      this.error(errText(err));
      return false;
    }
  }

  private async loadSession(d: Daemon, sessionId: string): Promise<void> {
    const c = this.client(d);
    if (!c || (d === this.target() && sessionId === this.state.sessionId)) {
      return;
    }
    if (this.state.running) {
      this.error('A turn is running: stop it first.');
      this.postSessions();
      return;
    }
    try {
      const r = await call(c, Methods.agentSessionsLoad, { sessionId });
      const s = emptyChat();
      s.sessionId = r.session.sessionId;
      s.title = r.session.title;
      s.commands = r.availableCommands ?? [];
      for (const u of r.updates ?? []) {
        reduce(s, u);
      }
      this.daemon = d;
      this.nextFolder = undefined;
      this.state = s;
      this.post();
      this.syncApprovals();
    } catch (err) {
      this.error(errText(err));
    }
  }

  /** listSessions asks a daemon (or each) for its sessions. */
  private async listSessions(only?: Daemon): Promise<void> {
    await Promise.all(
      (only ? [only] : this.daemons.list()).map(async (d) => {
        const c = d.current;
        if (!c) {
          return;
        }
        try {
          const r = await call(c, Methods.agentSessionsList, {});
          this.sessions.set(d.id, r.sessions ?? []);
        } catch {
          this.sessions.set(d.id, []); // no agent: the first prompt says why
        }
      }),
    );
    this.postSessions();
  }

  private async prompt(text: string): Promise<void> {
    if (!text.trim()) {
      return;
    }
    if (this.state.running) {
      this.error('A turn is running: wait for it or stop it.');
      return;
    }
    if (!this.state.sessionId && !(await this.newSession())) {
      return;
    }
    const d = this.target();
    const c = this.client(d);
    const sessionId = this.state.sessionId;
    if (!c || !d || !sessionId) {
      return;
    }
    this.state.entries.push({ kind: 'user', text });
    this.state.running = true;
    this.post();
    try {
      const r = await call(c, Methods.agentPrompt, { sessionId, prompt: text });
      if (this.state.sessionId === sessionId) {
        endTurn(this.state, r.stopReason);
        if (r.resume && r.resume !== sessionId) {
          await this.loadSession(d, r.resume);
        }
      }
    } catch (err) {
      if (this.state.sessionId === sessionId) {
        this.state.running = false;
        this.error(errText(err));
      }
    }
    this.post();
    void this.listSessions(d);
  }

  private async cancel(): Promise<void> {
    const c = this.target()?.current;
    const sessionId = this.state.sessionId;
    if (!c || !sessionId) {
      return;
    }
    try {
      await call(c, Methods.agentCancel, { sessionId });
    } catch (err) {
      this.error(errText(err));
    }
  }

  /** The tool calls of this session that wait for the person, each with
   * the text of its prompt (who asks, the command, what "always" covers),
   * which its card shows above the answers, and the change it would make
   * (its card's compact diff). */
  private waiting(): { prompts: Map<string, string>; changes: Map<string, ProposedChange[]> } {
    const author = this.state.sessionId ? `agent:${this.state.sessionId}` : undefined;
    const prompts = new Map<string, string>();
    const changes = new Map<string, ProposedChange[]>();
    for (const p of this.approvals.waiting()) {
      if (author && p.params.toolCall.author === author) {
        const id = p.params.toolCall.toolCallId;
        const change = p.params.icerc.changes ?? [];
        prompts.set(id, promptDetail(p.params));
        changes.set(id, change);
        // Kept on the card after the answer: the diffs, not the contents.
        const t = findTool(this.state, id);
        if (t && change.length > 0) {
          t.changes = change.map(({ path, action, diff, binary, truncated }) => ({ path, action, diff, binary, truncated }));
        }
      }
    }
    return { prompts, changes };
  }

  /** syncApprovals shows a card for each waiting call of the session, also
   * one whose tool_call update has not come yet. */
  private syncApprovals(): void {
    const author = this.state.sessionId ? `agent:${this.state.sessionId}` : undefined;
    for (const p of this.approvals.waiting()) {
      const tc = p.params.toolCall;
      if (author && tc.author === author && !this.state.entries.some((e) => e.kind === 'tool' && e.toolCallId === tc.toolCallId)) {
        reduce(this.state, { sessionUpdate: 'tool_call', toolCallId: tc.toolCallId, title: tc.title || tc.toolName, kind: tc.kind, status: 'pending' });
      }
    }
    this.post();
  }

  /** post sends the state to the webview, at most every 50 ms. */
  private post(): void {
    if (this.flushTimer) {
      return;
    }
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      const d = this.target();
      const key = d && this.state.sessionId ? sessionKey(d, this.state.sessionId) : undefined;
      const { prompts, changes } = this.waiting();
      void this.webview?.postMessage({ type: 'state', state: { ...view(this.state, prompts, changes), sessionKey: key } });
    }, 50);
  }

  private postSessions(): void {
    const target = this.target();
    const multi = this.daemons.multi;
    void this.webview?.postMessage({
      type: 'sessions',
      current: target && this.state.sessionId ? sessionKey(target, this.state.sessionId) : undefined,
      sessions: this.daemons.list().flatMap((d) =>
        (this.sessions.get(d.id) ?? []).map((s) => ({
          id: sessionKey(d, s.sessionId),
          title: `${multi ? `${d.name} · ` : ''}${inertLine(s.title) || `Session ${s.sessionId.slice(0, 8)}`}`,
          updatedAt: s.updatedAt,
          messages: s.messages,
        })),
      ),
      // The folder picker shows only with several folders.
      folders: multi ? this.daemons.list().map((d) => ({ id: d.id, name: d.name })) : [],
      folder: (this.nextFolder ? this.daemons.get(this.nextFolder) : undefined)?.id ?? target?.id,
    });
  }

  dispose(): void {
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}

