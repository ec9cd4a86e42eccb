// The form of an MCP server's question (elicitation.ts posts it): fields
// from the requested schema, pre-filled with their defaults; or, in URL
// mode, the address to visit. Plain DOM, every text set as text; the
// values go back to the extension, which checks them.
// @ts-check
(function () {
  // eslint-disable-next-line no-undef
  const vscode = acquireVsCodeApi();
  const root = /** @type {HTMLElement} */ (document.getElementById('root'));

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== false) {
        e.setAttribute(k, v === true ? '' : String(v));
      }
    }
    if (text !== undefined) {
      e.textContent = text;
    }
    return e;
  }

  /** @type {any[]} */
  let fields = [];

  function input(f) {
    const id = `f-${f.name}`;
    switch (f.kind) {
      case 'boolean': {
        const box = el('input', { type: 'checkbox', id, name: f.name });
        box.checked = f.default === true;
        return box;
      }
      case 'choice': {
        const sel = el('select', { id, name: f.name });
        if (!f.required || f.default === undefined) {
          sel.appendChild(el('option', { value: '' }, f.required ? 'Choose…' : '—'));
        }
        for (const o of f.options) {
          const opt = el('option', { value: o.value }, o.label);
          opt.selected = o.value === f.default;
          sel.appendChild(opt);
        }
        return sel;
      }
      case 'choices': {
        const group = el('div', { class: 'choices', id, role: 'group' });
        for (const o of f.options) {
          const label = el('label', { class: 'choice' });
          const box = el('input', { type: 'checkbox', name: f.name, value: o.value });
          box.checked = Array.isArray(f.default) && f.default.includes(o.value);
          label.append(box, document.createTextNode(' ' + o.label));
          group.appendChild(label);
        }
        return group;
      }
      case 'number':
      case 'integer': {
        const i = el('input', { type: 'number', id, name: f.name, step: f.kind === 'integer' ? '1' : 'any', min: f.minimum, max: f.maximum });
        if (f.default !== undefined) {
          i.value = String(f.default);
        }
        return i;
      }
      default: {
        const i = el('input', { type: f.input || 'text', id, name: f.name, minlength: f.minLength, maxlength: f.maxLength });
        if (f.default !== undefined) {
          i.value = String(f.default);
        }
        return i;
      }
    }
  }

  function values() {
    const out = {};
    for (const f of fields) {
      if (f.kind === 'choices') {
        out[f.name] = [...document.querySelectorAll(`input[name="${CSS.escape(f.name)}"]:checked`)].map((b) => /** @type {HTMLInputElement} */ (b).value);
        continue;
      }
      const e = /** @type {HTMLInputElement} */ (document.getElementById(`f-${f.name}`));
      out[f.name] = f.kind === 'boolean' ? e.checked : e.value;
    }
    return out;
  }

  function buttons(primary, primaryText) {
    const bar = el('div', { class: 'buttons' });
    const ok = el('button', { id: 'submit', type: primary === 'submit' ? 'submit' : 'button' }, primaryText);
    const decline = el('button', { id: 'decline', type: 'button', class: 'secondary' }, 'Decline');
    const cancel = el('button', { id: 'cancel', type: 'button', class: 'secondary' }, 'Cancel');
    if (primary === 'open') {
      ok.addEventListener('click', () => vscode.postMessage({ type: 'open' }));
    }
    decline.addEventListener('click', () => vscode.postMessage({ type: 'decline' }));
    cancel.addEventListener('click', () => vscode.postMessage({ type: 'cancel' }));
    bar.append(ok, decline, cancel);
    return bar;
  }

  function show(m) {
    fields = m.fields || [];
    root.replaceChildren();
    root.appendChild(el('h1', {}, m.title));
    if (m.call) {
      root.appendChild(el('p', { class: 'call' }, m.call));
    }
    root.appendChild(el('p', { class: 'message' }, m.message));
    if (m.mode === 'url') {
      const box = el('div', { class: 'url' });
      box.appendChild(el('div', { class: 'host' }, m.host));
      box.appendChild(el('code', { id: 'url' }, m.url));
      root.appendChild(box);
      root.appendChild(el('p', { class: 'note' }, m.note));
      root.appendChild(buttons(m.url && m.host ? 'open' : 'none', `Open ${m.host || ''}`.trim()));
      if (!m.host) {
        /** @type {HTMLButtonElement} */ (document.getElementById('submit')).disabled = true;
      }
      return;
    }
    const form = el('form', { id: 'form', novalidate: true });
    for (const f of fields) {
      const row = el('div', { class: `field kind-${f.kind}` });
      const label = el('label', { for: `f-${f.name}`, class: 'label' }, f.label);
      if (f.required) {
        label.appendChild(el('span', { class: 'required', title: 'required' }, ' *'));
      }
      const i = input(f);
      if (f.kind === 'boolean') {
        const line = el('div', { class: 'check' });
        line.append(i, label);
        row.appendChild(line);
      } else {
        row.append(label, i);
      }
      if (f.description) {
        row.appendChild(el('div', { class: 'description' }, f.description));
      }
      row.appendChild(el('div', { class: 'error', id: `e-${f.name}`, role: 'alert' }));
      form.appendChild(row);
    }
    form.appendChild(buttons('submit', 'Submit'));
    // An error goes once its field is edited.
    const edited = (ev) => {
      const row = /** @type {HTMLElement} */ (ev.target).closest('.field');
      if (row) {
        row.classList.remove('invalid');
        const e = row.querySelector('.error');
        if (e) {
          e.textContent = '';
        }
      }
      const general = document.getElementById('general');
      if (general) {
        general.textContent = '';
      }
    };
    form.addEventListener('input', edited);
    form.addEventListener('change', edited);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      vscode.postMessage({ type: 'submit', values: values() });
    });
    root.appendChild(form);
    const first = form.querySelector('input, select');
    if (first) {
      /** @type {HTMLElement} */ (first).focus();
    }
  }

  function errors(m) {
    for (const f of fields) {
      const e = document.getElementById(`e-${f.name}`);
      if (e) {
        e.textContent = m.errors[f.name] || '';
        e.parentElement?.classList.toggle('invalid', Boolean(m.errors[f.name]));
      }
    }
    const general = document.getElementById('general') || root.appendChild(el('div', { id: 'general', class: 'error', role: 'alert' }));
    general.textContent = m.general || '';
  }

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (m.type === 'show') {
      show(m);
    } else if (m.type === 'errors') {
      errors(m);
    }
  });
  vscode.postMessage({ type: 'ready' });
})();
