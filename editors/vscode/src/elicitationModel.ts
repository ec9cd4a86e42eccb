// The model of MCP servers' questions (nexus/requestElicitation), without
// VS Code: a requested schema read as a form's fields, the values a person
// typed checked and turned into the answer's content, and the questions
// waiting for their answer. elicitation.ts shows them.

import { inertLine, inertText } from './inert';
import type { ElicitationField, ElicitationParams, ElicitationResult, ElicitationSchema } from './protocol';
import { type Waiting, WaitingQueue } from './waiting';

/** A field of a form, as the webview draws it. What the server wrote and
 * the form shows (label, description, the options' labels) is inert; the
 * name and the options' values, which the answer carries, are the
 * server's. */
export interface Field {
  name: string;
  label: string;
  description?: string;
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'choice' | 'choices';
  /** The HTML input type of a string: text, email, url, date, datetime-local. */
  input?: string;
  format?: string;
  required: boolean;
  options?: { value: string; label: string }[];
  /** The default, as the form shows it (pre-filled). */
  default?: string | number | boolean | string[];
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
}

/** fieldsOf reads the fields of a requested schema, in its order. Properties
 * the form cannot show (nested objects, arrays of anything but choices) are
 * left out: the daemon checks the answer against the whole schema. */
export function fieldsOf(schema: ElicitationSchema | undefined): Field[] {
  const required = new Set(schema?.required ?? []);
  const out: Field[] = [];
  for (const [name, p] of Object.entries(schema?.properties ?? {})) {
    const f = fieldOf(name, p, required.has(name));
    if (f) {
      out.push(f);
    }
  }
  return out;
}

const inputOfFormat: Record<string, string> = { email: 'email', uri: 'url', date: 'date', 'date-time': 'datetime-local' };

function fieldOf(name: string, p: ElicitationField, required: boolean): Field | undefined {
  const f: Field = { name, label: inertLine(p.title || name), description: p.description === undefined ? undefined : inertText(p.description), kind: 'string', required };
  const titled = (list?: { const: string; title?: string }[]) => (list ?? []).map((o) => ({ value: o.const, label: inertLine(o.title || o.const) }));
  if (p.type === 'array') {
    const options = p.items?.enum?.map((v) => ({ value: v, label: inertLine(v) })) ?? titled(p.items?.anyOf);
    if (options.length === 0) {
      return undefined;
    }
    Object.assign(f, { kind: 'choices', options, minItems: p.minItems, maxItems: p.maxItems });
    if (Array.isArray(p.default)) {
      f.default = p.default.filter((v): v is string => typeof v === 'string');
    }
    return f;
  }
  if (p.enum || p.oneOf || p.anyOf) {
    const options = p.enum ? p.enum.map((v, i) => ({ value: v, label: inertLine(p.enumNames?.[i] || v) })) : titled(p.oneOf ?? p.anyOf);
    Object.assign(f, { kind: 'choice', options });
    if (typeof p.default === 'string') {
      f.default = p.default;
    }
    return f;
  }
  switch (p.type) {
    case 'boolean':
      f.kind = 'boolean';
      if (typeof p.default === 'boolean') {
        f.default = p.default;
      }
      return f;
    case 'number':
    case 'integer':
      Object.assign(f, { kind: p.type, minimum: p.minimum, maximum: p.maximum });
      if (typeof p.default === 'number') {
        f.default = p.default;
      }
      return f;
    case 'string':
    case undefined:
      Object.assign(f, { input: inputOfFormat[p.format ?? ''] ?? 'text', format: p.format, minLength: p.minLength, maxLength: p.maxLength });
      if (typeof p.default === 'string') {
        f.default = p.format === 'date-time' ? p.default.replace(/(:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$/, '$1') : p.default;
      }
      return f;
  }
  return undefined;
}

/** What the webview sends of a field: text for strings and numbers (as
 * typed), a boolean for a checkbox, the picked values of choices. */
export type FormValue = string | boolean | string[] | undefined;

const emailRe = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** contentOf checks what the person typed and returns the answer's content,
 * or the errors by field name. An empty field is left out (the daemon fills
 * in its default); a required one must be filled. */
export function contentOf(fields: Field[], values: Record<string, FormValue>): { content?: Record<string, unknown>; errors: Record<string, string> } {
  const content: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const f of fields) {
    const v = values[f.name];
    const empty = v === undefined || v === '' || (Array.isArray(v) && v.length === 0);
    if (f.kind === 'boolean') {
      content[f.name] = v === true;
      continue;
    }
    if (empty) {
      if (f.required) {
        errors[f.name] = 'Required.';
      }
      continue;
    }
    switch (f.kind) {
      case 'choices': {
        const picked = Array.isArray(v) ? v : [String(v)];
        const bad = picked.find((x) => !f.options?.some((o) => o.value === x));
        if (bad !== undefined) {
          errors[f.name] = `"${bad}" is not a choice.`;
        } else if (f.minItems !== undefined && picked.length < f.minItems) {
          errors[f.name] = `Pick at least ${f.minItems}.`;
        } else if (f.maxItems !== undefined && picked.length > f.maxItems) {
          errors[f.name] = `Pick at most ${f.maxItems}.`;
        } else {
          content[f.name] = picked;
        }
        break;
      }
      case 'choice':
        if (!f.options?.some((o) => o.value === v)) {
          errors[f.name] = `"${String(v)}" is not a choice.`;
        } else {
          content[f.name] = v;
        }
        break;
      case 'number':
      case 'integer': {
        const n = Number(String(v).trim());
        if (String(v).trim() === '' || !Number.isFinite(n)) {
          errors[f.name] = 'A number, please.';
        } else if (f.kind === 'integer' && !Number.isInteger(n)) {
          errors[f.name] = 'A whole number, please.';
        } else if (f.minimum !== undefined && n < f.minimum) {
          errors[f.name] = `At least ${f.minimum}.`;
        } else if (f.maximum !== undefined && n > f.maximum) {
          errors[f.name] = `At most ${f.maximum}.`;
        } else {
          content[f.name] = n;
        }
        break;
      }
      default: {
        let s = String(v);
        const n = [...s].length;
        if (f.minLength !== undefined && n < f.minLength) {
          errors[f.name] = `At least ${f.minLength} characters.`;
        } else if (f.maxLength !== undefined && n > f.maxLength) {
          errors[f.name] = `At most ${f.maxLength} characters.`;
        } else if (f.format === 'email' && !emailRe.test(s)) {
          errors[f.name] = 'An email address, please.';
        } else if (f.format === 'uri' && !isURL(s)) {
          errors[f.name] = 'An address (URI), please.';
        } else if (f.format === 'date' && !/^\d{4}-\d{2}-\d{2}$/.test(s)) {
          errors[f.name] = 'A date (YYYY-MM-DD), please.';
        } else if (f.format === 'date-time') {
          const d = new Date(s);
          if (Number.isNaN(d.getTime())) {
            errors[f.name] = 'A date and time, please.';
          } else {
            s = d.toISOString();
            content[f.name] = s;
          }
        } else {
          content[f.name] = s;
        }
      }
    }
  }
  return Object.keys(errors).length > 0 ? { errors } : { content, errors };
}

function isURL(s: string): boolean {
  try {
    return Boolean(new URL(s).protocol);
  } catch {
    return false;
  }
}

/** safeURL is the address of a URL question when it may be opened: http
 * or https only. */
export function safeURL(s: string | undefined): URL | undefined {
  try {
    const u = new URL(s ?? '');
    return u.protocol === 'https:' || u.protocol === 'http:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** questionTitle is a question's one line: the server, and the call;
 * inert. */
export function questionTitle(p: ElicitationParams): string {
  const call = p.toolCall ? ` (${inertLine(`${p.toolCall.serverName ? `${p.toolCall.serverName}/` : ''}${p.toolCall.toolName}`)}, by ${inertLine(p.toolCall.author || 'someone')})` : '';
  return `MCP server "${inertLine(p.server)}" asks${call}`;
}

/** questionText is what a question shows of the server's words: its
 * message, inert, and the call it belongs to (its title is a model's or a
 * server's words, inert too). */
export function questionText(p: ElicitationParams): { message: string; call: string } {
  const call = p.toolCall
    ? `During the call ${inertLine(p.toolCall.toolCallId)}${p.toolCall.title ? ` (${inertLine(p.toolCall.title)})` : ''}.`
    : 'The call it belongs to is not known.';
  return { message: inertText(p.message), call };
}

/** A question waiting for its answer. */
export type Question = Waiting<ElicitationParams>;

/** Questions holds the questions not yet answered; each ends answered, or
 * withdrawn by the daemon ($/cancelRequest). */
export class Questions extends WaitingQueue<ElicitationParams, ElicitationResult> {
  add(params: ElicitationParams, now: Date = new Date(), source?: string): { question: Question; answer: Promise<ElicitationResult | undefined> } {
    const { item, answer } = this.push(params, now, source);
    return { question: item, answer };
  }

  /** withdraw drops a question the daemon no longer waits for. */
  withdraw(id: number): boolean {
    return this.drop(id);
  }
}
