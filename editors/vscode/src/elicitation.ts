// MCP servers' questions (nexus/requestElicitation): each opens a form in a
// webview panel (the requested schema's fields, pre-filled with their
// defaults, checked before they are sent), or, in URL mode, the address to
// visit, opened in the browser only after the person's click. The
// questions waiting are listed in Pending Approvals; a question the daemon
// withdraws ($/cancelRequest: the server cancelled it, its call ended)
// closes its panel.

import * as vscode from 'vscode';
import type { CancellationToken, LanguageClient } from 'vscode-languageclient/node';
import type { Daemon, Daemons } from './daemon';
import { contentOf, type Field, fieldsOf, type FormValue, type Question, questionText, questionTitle, Questions, safeURL } from './elicitationModel';
import { inFolder } from './folders';
import { inertLine } from './inert';
import { type ElicitationParams, type ElicitationResult, Requests } from './protocol';
import { pageHTML, pageOptions } from './webview';

/** What the form's webview posts. */
type FromForm =
  | { type: 'ready' }
  | { type: 'submit'; values: Record<string, FormValue> }
  | { type: 'open' }
  | { type: 'decline' }
  | { type: 'cancel' };

export class ElicitationView implements vscode.Disposable {
  readonly questions = new Questions();
  private readonly panels = new Map<number, vscode.WebviewPanel>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly daemons: Daemons,
  ) {
    this.disposables.push(
      daemons.onWillStart(({ daemon, client }) => this.attach(daemon, client)),
      daemons.onDidChangeState((d) => {
        if (d.state !== 'ready') {
          this.questions.clear(d.id); // the daemon that asked is gone
        }
      }),
      this.questions.onDidChange(() => {
        for (const [id, panel] of this.panels) {
          if (!this.questions.has(id)) {
            this.panels.delete(id);
            panel.dispose();
          }
        }
      }),
      vscode.commands.registerCommand('nexus.openQuestion', (id?: number) => this.open(id)),
    );
  }

  private attach(d: Daemon, client: LanguageClient): void {
    client.onRequest(Requests.requestElicitation, (params: ElicitationParams, token: CancellationToken) => this.ask(d, params, token));
  }

  /** ask shows the question and waits for its answer, or its withdrawal. */
  private async ask(d: Daemon, params: ElicitationParams, token: CancellationToken): Promise<ElicitationResult> {
    const { question, answer } = this.questions.add(params, new Date(), d.id);
    const sub = token.onCancellationRequested(() => this.questions.withdraw(question.id));
    this.show(question, false);
    const r = await answer;
    sub.dispose();
    // Withdrawn: the daemon no longer reads the answer.
    return r ?? { action: 'cancel' };
  }

  /** open reveals the form of a question (the Pending Approvals item's
   * command), or asks which one. */
  private async open(id?: number): Promise<void> {
    let q = id === undefined ? undefined : this.questions.get(id);
    if (!q) {
      const items = this.questions.list().map((x) => ({ label: questionTitle(x.params), description: inertLine(x.params.message), x }));
      if (items.length === 0) {
        void vscode.window.showInformationMessage('Nexus: no question is waiting.');
        return;
      }
      q = items.length === 1 ? items[0].x : (await vscode.window.showQuickPick(items, { placeHolder: 'Which question?' }))?.x;
    }
    if (q) {
      this.show(q, true);
    }
  }

  private show(q: Question, focus: boolean): void {
    const existing = this.panels.get(q.id);
    if (existing) {
      existing.reveal(undefined, !focus);
      return;
    }
    const panel = vscode.window.createWebviewPanel('nexus.elicitation', `MCP: ${inertLine(q.params.server)} asks`, { viewColumn: vscode.ViewColumn.Active, preserveFocus: false }, {
      ...pageOptions(this.extensionUri),
      retainContextWhenHidden: true,
    });
    this.panels.set(q.id, panel);
    panel.webview.html = pageHTML(panel.webview, this.extensionUri, {
      css: 'elicitation.css',
      js: 'elicitation.js',
      title: 'MCP question',
      body: '<div id="root"></div>',
      csp: "form-action 'none';",
    });
    const fields = q.params.mode === 'url' ? [] : fieldsOf(q.params.requestedSchema);
    const sub = panel.webview.onDidReceiveMessage((m: FromForm) => this.onMessage(q, panel, fields, m));
    panel.onDidDispose(() => {
      sub.dispose();
      this.panels.delete(q.id);
      // Closed without an answer: dismissed.
      this.questions.answer(q.id, { action: 'cancel' });
    });
  }

  private onMessage(q: Question, panel: vscode.WebviewPanel, fields: Field[], m: FromForm): void {
    switch (m.type) {
      case 'ready':
        void panel.webview.postMessage(this.form(q, fields));
        return;
      case 'decline':
      case 'cancel':
        this.questions.answer(q.id, { action: m.type });
        return;
      case 'open': {
        const url = safeURL(q.params.url);
        if (url) {
          void vscode.env.openExternal(vscode.Uri.parse(url.toString(), true));
          this.questions.answer(q.id, { action: 'accept' });
        }
        return;
      }
      case 'submit': {
        const { content, errors } = contentOf(fields, m.values ?? {});
        if (!content) {
          void panel.webview.postMessage({ type: 'errors', errors, general: 'Some fields need another look.' });
          return;
        }
        this.questions.answer(q.id, { action: 'accept', content });
      }
    }
  }

  /** form is what the webview draws. */
  private form(q: Question, fields: Field[]) {
    const p = q.params;
    const d = q.source ? this.daemons.get(q.source) : undefined;
    const title = d ? inFolder(this.daemons, d, questionTitle(p)) : questionTitle(p);
    const { message, call } = questionText(p);
    if (p.mode === 'url') {
      const url = safeURL(p.url);
      return {
        type: 'show', mode: 'url', title, call, message, url: inertLine(p.url), host: url?.host,
        note: url
          ? 'Nothing is opened until you click Open; your browser then shows the page, outside VS Code. Decline if you do not expect this.'
          : 'This address cannot be opened (only http and https addresses are).',
      };
    }
    return { type: 'show', mode: 'form', title, call, message, fields };
  }

  dispose(): void {
    this.questions.clear();
    for (const p of this.panels.values()) {
      p.dispose();
    }
    for (const d of this.disposables) {
      d.dispose();
    }
  }
}
