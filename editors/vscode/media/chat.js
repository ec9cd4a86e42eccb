// The Agent Chat webview: renders the state chat.ts posts, and posts the
// person's actions back. Plain DOM; the agent's text comes rendered (and
// escaped) by markdown.ts's renderMarkdown; everything else is set as text.
// @ts-check
(function () {
  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const $ = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
  const log = $('log');
  const prompt = /** @type {HTMLTextAreaElement} */ ($('prompt'));
  const sessions = /** @type {HTMLSelectElement} */ ($('sessions'));
  const folder = /** @type {HTMLSelectElement} */ ($('folder'));
  const stop = $('stop');
  const send = $('send');
  const usage = $('usage');
  const completions = $('completions');
  let state = { entries: [], commands: [], running: false, usage: '', sessionId: undefined, sessionKey: undefined };
  let selected = 0;

  const statusIcon = { pending: '○', in_progress: '◐', completed: '✓', failed: '✗' };
  const answers = [
    ['allow_once', 'Allow once'],
    ['allow_always', 'Always allow'],
    ['reject_once', 'Reject'],
    ['reject_always', 'Always reject'],
  ];

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) {
      e.className = cls;
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  /** The cards the person opened, by tool call id: kept across renders. */
  const expanded = new Set();

  /** fileLink is a link to a workspace file (chat.ts checks it). */
  function fileLink(text, href) {
    const a = el('a', 'file-link', text);
    a.href = '#';
    a.dataset.href = href;
    a.title = `Open ${href}`;
    return a;
  }

  /** titleLine is a card's one line, its file (if the line names it) a link. */
  function titleLine(t) {
    const span = el('span', 'tool-title');
    const at = t.link ? t.title.indexOf(t.link) : -1;
    if (at < 0) {
      span.textContent = t.title;
      return span;
    }
    span.append(t.title.slice(0, at), fileLink(t.link, t.link), t.title.slice(at + t.link.length));
    return span;
  }

  // A tool call: its line in words (nexusd's summary), which opens to its
  // arguments and result; the compact diff of a file change (the one asked
  // about while it waits, the one it made once it completed, asked or not);
  // and, while it waits, the prompt and the answers.
  function toolCard(t) {
    const card = el('div', `entry tool status-${t.status}${t.waiting ? ' waiting' : ''}${t.parent ? ' subagent' : ''}`);
    card.dataset.toolCallId = t.toolCallId;
    const details = /** @type {HTMLDetailsElement} */ (el('details', 'tool-call'));
    details.open = expanded.has(t.toolCallId);
    details.addEventListener('toggle', () => {
      if (details.open) {
        expanded.add(t.toolCallId);
      } else {
        expanded.delete(t.toolCallId);
      }
    });
    const head = el('summary', 'tool-head');
    head.title = 'Show the arguments and the result';
    head.append(el('span', 'tool-icon', t.waiting ? '⚠' : statusIcon[t.status] || '•'));
    head.append(titleLine(t));
    if (t.waiting || t.status === 'pending' || t.status === 'in_progress') {
      head.append(el('span', 'tool-status', t.waiting ? 'waiting for approval' : String(t.status).replace('_', ' ')));
    }
    details.append(head);
    const body = el('div', 'tool-body');
    if (t.input) {
      body.append(el('div', 'tool-label', 'Arguments'), el('pre', 'tool-input', t.input.length > 4000 ? t.input.slice(0, 4000) + '…' : t.input));
    }
    if (t.detail) {
      body.append(el('div', 'tool-label', t.status === 'failed' ? 'Error' : 'Result'), el('pre', 'tool-detail', t.detail.length > 4000 ? t.detail.slice(0, 4000) + '…' : t.detail));
    }
    const activity = el('a', 'tool-activity', 'Show in Tool Activity');
    activity.href = '#';
    activity.addEventListener('click', (ev) => {
      ev.preventDefault();
      vscode.postMessage({ type: 'details', toolCallId: t.toolCallId });
    });
    body.append(activity);
    details.append(body);
    card.append(details);
    if (t.waiting && t.prompt) {
      card.append(el('pre', 'tool-prompt', t.prompt)); // who asks, the command, what "always" covers
    }
    if (t.diff && t.diff.length > 0 && t.status !== 'failed') {
      // (A failed call changed nothing: its line says why.)
      // The change as nexusd computed it, inert: each line set as text.
      const diff = el('pre', 'tool-diff');
      for (const l of t.diff) {
        diff.append(el('span', `diff-${l.kind}`, l.text + '\n'));
      }
      card.append(diff);
      if (t.waiting) {
        const open = el('button', 'secondary open-diff', 'Open diff');
        open.addEventListener('click', () => vscode.postMessage({ type: 'openDiff', toolCallId: t.toolCallId }));
        card.append(open);
      }
    }
    if (t.waiting) {
      const row = el('div', 'tool-answers');
      for (const [answer, label] of answers) {
        const b = el('button', answer.startsWith('reject') ? 'secondary' : '', label);
        b.addEventListener('click', () => {
          for (const x of row.querySelectorAll('button')) {
            /** @type {HTMLButtonElement} */ (x).disabled = true;
          }
          vscode.postMessage({ type: 'answer', toolCallId: t.toolCallId, answer });
        });
        row.append(b);
      }
      card.append(row);
    }
    return card;
  }

  // The agent's plan: a checklist, the steps set as text (the model's words).
  function planCard(p) {
    const card = el('div', 'entry plan');
    const done = p.steps.filter((s) => s.status === 'completed').length;
    card.append(el('div', 'plan-head', p.steps.length === 0 ? 'Plan cleared' : `Plan · ${done}/${p.steps.length} done`));
    if (p.steps.length > 0) {
      const list = el('ul', 'plan-steps');
      for (const s of p.steps) {
        const known = Object.prototype.hasOwnProperty.call(statusIcon, s.status);
        const item = el('li', `plan-step status-${known ? s.status : 'other'}`);
        item.append(el('span', 'plan-icon', known ? statusIcon[s.status] : '•'));
        item.append(el('span', 'plan-text', s.content));
        if (!known) {
          item.append(el('span', 'tool-status', s.status));
        }
        list.append(item);
      }
      card.append(list);
    }
    return card;
  }

  function render() {
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 40;
    log.replaceChildren();
    if (state.entries.length === 0) {
      log.append(el('div', 'empty', state.sessionId ? 'A new session: ask something.' : 'Ask the agent something to start a session.'));
    }
    for (const e of state.entries) {
      switch (e.kind) {
        case 'user':
          log.append(el('div', 'entry user', e.text));
          break;
        case 'agent':
        case 'thought': {
          const d = el('div', `entry ${e.kind} markdown`);
          d.innerHTML = e.html; // escaped by renderMarkdown
          log.append(d);
          break;
        }
        case 'output':
          log.append(el('pre', 'entry output', e.text));
          break;
        case 'tool':
          log.append(toolCard(e));
          break;
        case 'plan':
          log.append(planCard(e));
          break;
        case 'stop':
          log.append(el('div', 'entry stop', e.text));
          break;
        case 'error':
          log.append(el('div', 'entry error', e.text));
          break;
      }
    }
    if (state.running) {
      log.append(el('div', 'entry working', 'working…'));
    }
    stop.hidden = !state.running;
    send.hidden = state.running;
    usage.textContent = state.usage || '';
    if (atBottom) {
      log.scrollTop = log.scrollHeight;
    }
  }

  // A link of the answer or of a card is no navigation: its target goes to
  // chat.ts, which opens a web page outside or a workspace file at its line.
  log.addEventListener('click', (ev) => {
    const a = /** @type {HTMLElement} */ (ev.target).closest('a[data-href]');
    if (a) {
      ev.preventDefault();
      ev.stopPropagation();
      vscode.postMessage({ type: 'openLink', href: /** @type {HTMLElement} */ (a).dataset.href });
    }
  });

  // ---- / commands

  function matches() {
    const v = prompt.value;
    if (!v.startsWith('/') || /\s/.test(v)) {
      return [];
    }
    const word = v.slice(1).toLowerCase();
    return (state.commands || []).filter((c) => c.name.toLowerCase().startsWith(word));
  }

  function showCompletions() {
    const ms = matches();
    completions.replaceChildren();
    if (ms.length === 0) {
      completions.hidden = true;
      return;
    }
    selected = Math.min(selected, ms.length - 1);
    ms.forEach((c, i) => {
      const row = el('div', `completion${i === selected ? ' selected' : ''}`);
      row.setAttribute('role', 'option');
      row.append(el('span', 'name', `/${c.name}`));
      if (c.input && c.input.hint) {
        row.append(el('span', 'hint', ` ${c.input.hint}`));
      }
      row.append(el('span', 'desc', c.description || ''));
      row.addEventListener('mousedown', (ev) => {
        ev.preventDefault();
        pick(c);
      });
      completions.append(row);
    });
    completions.hidden = false;
  }

  function pick(c) {
    prompt.value = `/${c.name}${c.input ? ' ' : ''}`;
    completions.hidden = true;
    prompt.focus();
  }

  function submit() {
    const text = prompt.value;
    if (!text.trim() || state.running) {
      return;
    }
    prompt.value = '';
    completions.hidden = true;
    vscode.postMessage({ type: 'prompt', text });
  }

  // The commands come with a session: "/" before there is one starts it (as
  // New does), and the list shows once it is there.
  let askedCommands = false;
  prompt.addEventListener('input', () => {
    selected = 0;
    if (prompt.value.startsWith('/') && !state.sessionId && !askedCommands) {
      askedCommands = true;
      vscode.postMessage({ type: 'newSession' });
    }
    showCompletions();
  });
  prompt.addEventListener('keydown', (ev) => {
    const ms = completions.hidden ? [] : matches();
    if (ms.length > 0) {
      if (ev.key === 'ArrowDown' || ev.key === 'ArrowUp') {
        ev.preventDefault();
        selected = (selected + (ev.key === 'ArrowDown' ? 1 : ms.length - 1)) % ms.length;
        showCompletions();
        return;
      }
      if (ev.key === 'Tab' || (ev.key === 'Enter' && !ev.shiftKey && prompt.value !== `/${ms[selected].name}`)) {
        ev.preventDefault();
        pick(ms[selected]);
        return;
      }
      if (ev.key === 'Escape') {
        completions.hidden = true;
        return;
      }
    }
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      submit();
    }
  });
  send.addEventListener('click', submit);
  stop.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
  $('new').addEventListener('click', () => vscode.postMessage({ type: 'newSession' }));
  sessions.addEventListener('focus', () => vscode.postMessage({ type: 'listSessions' }));
  folder.addEventListener('change', () => vscode.postMessage({ type: 'folder', id: folder.value }));
  sessions.addEventListener('change', () => {
    if (sessions.value) {
      vscode.postMessage({ type: 'loadSession', sessionId: sessions.value });
    }
  });

  function renderSessions(current, list) {
    sessions.replaceChildren();
    const none = el('option', '', current ? '' : 'No session yet');
    none.value = '';
    if (!current) {
      sessions.append(none);
    }
    let found = false;
    for (const s of list) {
      const o = el('option', '', `${s.title}${s.messages ? ` (${s.messages})` : ''}`);
      o.value = s.id;
      o.title = `${s.id}, updated ${s.updatedAt}`;
      if (s.id === current) {
        o.selected = true;
        found = true;
      }
      sessions.append(o);
    }
    if (current && !found) {
      const o = el('option', '', 'Current session');
      o.value = current;
      o.selected = true;
      sessions.prepend(o);
    }
  }
  let sessionList = [];

  /** renderFolders fills the folder picker; hidden with one folder. */
  function renderFolders(list, current) {
    folder.hidden = list.length === 0;
    folder.replaceChildren();
    for (const f of list) {
      const o = el('option', '', f.name);
      o.value = f.id;
      o.selected = f.id === current;
      folder.append(o);
    }
  }

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m.type === 'state') {
      const changedSession = m.state.sessionKey !== state.sessionKey;
      state = m.state;
      render();
      if (changedSession && document.activeElement === prompt) {
        showCompletions();
      }
      if (changedSession) {
        renderSessions(state.sessionKey, sessionList);
      }
    } else if (m.type === 'sessions') {
      sessionList = m.sessions;
      renderSessions(state.sessionKey ?? m.current, sessionList);
      renderFolders(m.folders || [], m.folder);
    }
  });
  render();
  vscode.postMessage({ type: 'ready' });
})();
