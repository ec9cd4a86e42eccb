// What the editor knows of .nexus/config.yaml without a YAML extension: the
// keys and values the JSON Schema (schemas/nexus-config.schema.json,
// generated from the config types) allows at a position, and the unknown
// keys and wrong values of a file. Plain functions of text, testable
// without VS Code.
//
// The YAML is read line by line by indentation (block mappings and lists,
// as the config is written); a flow mapping ({...}) or a multi-line
// scalar is left alone: nexusd's own check reports what this misses.

/** The subset of JSON Schema (draft-07) that the config's schema uses. */
export interface Schema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  pattern?: string;
  /** patternErrorMessage says the pattern in words (a YAML extension's keyword). */
  patternErrorMessage?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  properties?: Record<string, Schema>;
  additionalProperties?: Schema | boolean;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  allOf?: Schema[];
  not?: Schema;
}

/** A key of a mapping as completion offers it. */
export interface KeyItem {
  key: string;
  description: string;
  /** detail: the type, the values allowed and the default, in one line. */
  detail: string;
  /** block: the value goes on the lines below (a mapping or a list). */
  block: boolean;
  /** values: the values allowed, when they are few (an enum, a boolean). */
  values: string[];
}

/** A problem in the file, at a line and columns (0-based, end exclusive). */
export interface Problem {
  line: number;
  start: number;
  end: number;
  message: string;
}

/** schemaAt is the schema of the value at path ("[]": a list's item). */
export function schemaAt(root: Schema, path: string[]): Schema | undefined {
  let s: Schema | undefined = root;
  for (const seg of path) {
    if (!s) {
      return undefined;
    }
    s = child(s, seg);
  }
  return s;
}

function child(s: Schema, seg: string): Schema | undefined {
  if (seg === '[]') {
    return s.items ?? s.allOf?.map((a) => a.items).find((x) => x);
  }
  const p = s.properties?.[seg] ?? s.allOf?.map((a) => a.properties?.[seg]).find((x) => x);
  if (p) {
    return p;
  }
  const ap = s.additionalProperties;
  return typeof ap === 'object' ? ap : undefined;
}

/** closed reports whether a mapping's keys are only its properties. */
function closed(s: Schema): boolean {
  return s.additionalProperties === false;
}

/** types are the JSON types s allows, through anyOf and allOf. */
function types(s: Schema): Set<string> {
  const out = new Set<string>();
  const add = (x: Schema): void => {
    if (typeof x.type === 'string') {
      out.add(x.type);
    } else if (Array.isArray(x.type)) {
      x.type.forEach((t) => out.add(t));
    }
    if (x.enum) {
      x.enum.forEach((v) => out.add(v === null ? 'null' : typeof v));
    }
    x.anyOf?.forEach(add);
    x.allOf?.forEach(add);
  };
  add(s);
  return out;
}

/** enumValues are the values of s's enum, through anyOf and allOf, null left out. */
export function enumValues(s: Schema): string[] {
  const out: string[] = [];
  const add = (x: Schema): void => {
    x.enum?.forEach((v) => {
      if (typeof v === 'string' && !out.includes(v)) {
        out.push(v);
      }
    });
    x.anyOf?.forEach(add);
    x.allOf?.forEach(add);
  };
  add(s);
  return out;
}

function isBlock(s: Schema): boolean {
  const k = kindOf(s);
  return k === 'mapping' || k === 'list';
}

/** kindOf names what s holds, as the reference does: "size", "duration",
 * "integer", "mapping", ... */
export function kindOf(s: Schema): string {
  if (s.allOf && s.type === undefined && s.anyOf === undefined) {
    return kindOf(s.allOf[0]);
  }
  if (s.anyOf) {
    const first = s.anyOf[0];
    if (first.pattern?.includes('ms|s|m|h')) {
      return 'duration';
    }
    if (s.anyOf.some((a) => a.pattern?.includes('KiB'))) {
      return 'size';
    }
    return first.enum ? 'string' : kindOf(first);
  }
  const t = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  return t[0] === 'object' ? 'mapping' : t[0] === 'array' ? 'list' : (t[0] ?? 'any');
}

/** describe is a one-line summary: "bbolt | redis · default bbolt". */
export function describe(s: Schema): string {
  const values = enumValues(s).filter((v) => v !== '');
  const what = values.length > 0 ? values.join(' | ') : kindOf(s);
  const def = s.default === undefined ? '' : ` · default ${Array.isArray(s.default) ? `[${s.default.join(', ')}]` : String(s.default)}`;
  return what + def;
}

/** keysOf are the keys of the mapping s, less those in present. */
export function keysOf(s: Schema, present: Set<string> = new Set()): KeyItem[] {
  const props: Record<string, Schema> = { ...(s.properties ?? {}) };
  s.allOf?.forEach((a) => Object.assign(props, a.properties ?? {}));
  return Object.entries(props)
    .filter(([k]) => !present.has(k))
    .map(([key, p]) => {
      const values = enumValues(p);
      if (values.length === 0 && types(p).has('boolean')) {
        values.push('true', 'false');
      }
      return { key, description: p.description ?? '', detail: describe(p), block: isBlock(p) && values.length === 0, values: values.filter((v) => v !== '') };
    });
}

/** A line of the file as the path finder reads it. */
interface Line {
  /** dashes: the columns of the "- " list markers before the content. */
  dashes: number[];
  /** key and its column, when the line holds "key:". */
  key?: string;
  keyCol: number;
  /** value: the text after "key:" (or after the dashes), comment cut. */
  value: string;
  valueCol: number;
  blank: boolean;
}

const keyRe = /^([^\s#'"{[\]},&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?|"[^"]*"|'[^']*')\s*:(?=\s|$)/;

function parseLine(text: string): Line {
  const dashes: number[] = [];
  let i = 0;
  for (;;) {
    while (i < text.length && text[i] === ' ') {
      i++;
    }
    if (text[i] === '-' && (i + 1 === text.length || text[i + 1] === ' ')) {
      dashes.push(i);
      i++;
      continue;
    }
    break;
  }
  const rest = text.slice(i);
  if (rest === '' || rest.startsWith('#')) {
    return { dashes, keyCol: i, value: '', valueCol: i, blank: dashes.length === 0 };
  }
  const m = keyRe.exec(rest);
  if (!m) {
    return { dashes, keyCol: i, value: cutComment(rest), valueCol: i, blank: false };
  }
  let key = m[1].trim();
  if ((key.startsWith('"') && key.endsWith('"')) || (key.startsWith("'") && key.endsWith("'"))) {
    key = key.slice(1, -1);
  }
  const after = rest.slice(m[0].length);
  const lead = after.length - after.trimStart().length;
  return { dashes, key, keyCol: i, value: cutComment(after.trimStart()), valueCol: i + m[0].length + lead, blank: false };
}

function cutComment(s: string): string {
  if (s.startsWith('#')) {
    return '';
  }
  if (s.startsWith('"') || s.startsWith("'")) {
    const end = s.indexOf(s[0], 1);
    return end > 0 ? s.slice(0, end + 1) : s;
  }
  const i = s.search(/\s#/);
  return (i >= 0 ? s.slice(0, i) : s).trimEnd();
}

/** parentPath is the path of the mapping (or list) that holds what starts
 * at column col on line n, from the lines above it. */
function parentPath(lines: Line[], n: number, col: number): string[] {
  const path: string[] = [];
  let want = col;
  for (let i = n - 1; i >= 0 && want > 0; i--) {
    const l = lines[i];
    if (l.blank) {
      continue;
    }
    if (l.key !== undefined && l.keyCol < want) {
      path.unshift(l.key);
      want = l.keyCol;
    }
    for (let d = l.dashes.length - 1; d >= 0; d--) {
      if (l.dashes[d] < want) {
        path.unshift('[]');
        want = l.dashes[d];
      }
    }
    if (l.key === undefined && l.dashes.length === 0 && l.keyCol < want) {
      break; // a scalar line at a lesser indentation: not YAML this reads
    }
  }
  return path;
}

/** What completion offers at a position. */
export type Completion = { kind: 'keys'; path: string[]; items: KeyItem[] } | { kind: 'values'; path: string[]; schema: Schema; values: string[] } | { kind: 'none' };

/** complete says what may be written at (line, col) of text. */
export function complete(root: Schema, text: string, line: number, col: number): Completion {
  const all = text.split(/\r?\n/);
  const lines = all.map(parseLine);
  const before = (all[line] ?? '').slice(0, col);
  const cur = parseLine(before);
  // After "key: ": the key's values.
  if (cur.key !== undefined && col >= cur.valueCol) {
    const path = [...parentPath(lines, line, cur.dashes[0] ?? cur.keyCol), ...cur.dashes.map(() => '[]'), cur.key];
    return valuesAt(root, path);
  }
  // A key being typed, or nothing yet, at the cursor's indentation.
  if (!/^[\w-]*$/.test(before.slice(cur.keyCol))) {
    return { kind: 'none' };
  }
  const path = [...parentPath(lines, line, cur.dashes[0] ?? cur.keyCol), ...cur.dashes.map(() => '[]')];
  const s = schemaAt(root, path);
  if (!s) {
    return { kind: 'none' };
  }
  if (cur.dashes.length > 0 && !types(s).has('object')) {
    return valuesAt(root, path); // "- " in a list of values
  }
  if (!types(s).has('object') || !(s.properties || s.allOf?.some((a) => a.properties))) {
    return { kind: 'none' };
  }
  const present = new Set(siblings(lines, line, cur.keyCol));
  return { kind: 'keys', path, items: keysOf(s, present) };
}

function valuesAt(root: Schema, path: string[]): Completion {
  const s = schemaAt(root, path);
  if (!s) {
    return { kind: 'none' };
  }
  const values = enumValues(s).filter((v) => v !== '');
  if (values.length === 0 && types(s).has('boolean')) {
    values.push('true', 'false');
  }
  return values.length > 0 ? { kind: 'values', path, schema: s, values } : { kind: 'none' };
}

/** siblings are the keys already written at column col in the mapping
 * around line n (a list item's first key is on its "- " line). */
function siblings(lines: Line[], n: number, col: number): string[] {
  const out: string[] = [];
  for (let i = n - 1; i >= 0; i--) {
    const l = lines[i];
    if (l.blank) {
      continue;
    }
    if (l.key !== undefined && l.keyCol === col) {
      out.push(l.key);
      if (l.dashes.length > 0) {
        break; // the item's first key
      }
      continue;
    }
    if ((l.dashes[0] ?? l.keyCol) < col) {
      break;
    }
  }
  for (let i = n + 1; i < lines.length; i++) {
    const l = lines[i];
    if (l.blank) {
      continue;
    }
    if ((l.dashes[0] ?? l.keyCol) < col) {
      break;
    }
    if (l.key !== undefined && l.keyCol === col && l.dashes.length === 0) {
      out.push(l.key);
    }
  }
  return out;
}

/** problems are the unknown keys and wrong scalar values of text. */
export function problems(root: Schema, text: string): Problem[] {
  const out: Problem[] = [];
  const stack: { col: number; seg: string }[] = [];
  const all = text.split(/\r?\n/);
  let block = -1; // a multi-line scalar (| or >) runs while deeper than this
  for (let n = 0; n < all.length; n++) {
    const l = parseLine(all[n]);
    if (l.blank) {
      continue;
    }
    const start = l.dashes[0] ?? l.keyCol;
    if (block >= 0) {
      if (start > block) {
        continue;
      }
      block = -1;
    }
    if (n === 0 && all[n].startsWith('---')) {
      continue;
    }
    while (stack.length > 0 && stack[stack.length - 1].col >= start) {
      stack.pop();
    }
    for (const d of l.dashes) {
      stack.push({ col: d, seg: '[]' });
    }
    const parent = stack.map((e) => e.seg);
    if (l.key === undefined) {
      if (l.dashes.length > 0 && l.value !== '') {
        check(root, parent, l.value, n, l.valueCol, out);
      }
      continue;
    }
    const ps = schemaAt(root, parent);
    if (ps && closed(ps) && types(ps).has('object')) {
      const known = keysOf(ps).map((k) => k.key);
      if (!known.includes(l.key)) {
        const where = parent.length > 0 ? ` in ${pathText(parent)}` : '';
        out.push({ line: n, start: l.keyCol, end: l.keyCol + l.key.length, message: `unknown key "${l.key}"${where} (known: ${known.join(', ')})` });
      }
    }
    stack.push({ col: l.keyCol, seg: l.key });
    if (/^[|>]/.test(l.value)) {
      block = l.keyCol;
    } else if (l.value !== '') {
      check(root, [...parent, l.key], l.value, n, l.valueCol, out);
    }
  }
  return out;
}

function pathText(path: string[]): string {
  return path.join('.').replace(/\.\[\]/g, '[]');
}

/** check reports a scalar value the schema at path refuses. */
function check(root: Schema, path: string[], raw: string, line: number, col: number, out: Problem[]): void {
  const s = schemaAt(root, path);
  if (!s || /^[{[&*!]/.test(raw)) {
    return; // unknown here, a flow collection, an anchor, an alias or a tag: nexusd checks it
  }
  const v = scalar(raw);
  if (accepts(s, v)) {
    return;
  }
  const values = enumValues(s).filter((x) => x !== '');
  const shown = typeof v === 'string' ? JSON.stringify(v) : String(v);
  const message =
    values.length > 0 ? `${pathText(path)}: ${shown} is not one of: ${values.join(', ')}` : `${pathText(path)}: ${shown} is not ${expected(s)}`;
  out.push({ line, start: col, end: col + raw.length, message });
}

function expected(s: Schema): string {
  switch (kindOf(s)) {
    case 'mapping':
      return 'a mapping';
    case 'list':
      return 'a list';
    case 'size':
      return 'a size (examples: 1048576, 10MiB)';
    case 'duration':
      return 'a duration (examples: 30s, 1m30s, 250ms)';
    case 'integer':
      return 'an integer' + range(s);
    case 'number':
      return 'a number' + range(s);
    case 'boolean':
      return 'a boolean (true or false)';
  }
  const words = [s, ...(s.anyOf ?? []), ...(s.allOf ?? []).flatMap((a) => [a, ...(a.anyOf ?? [])])].find((x) => x.patternErrorMessage);
  if (words?.patternErrorMessage) {
    return `valid: it ${words.patternErrorMessage}`;
  }
  return s.minLength ? 'allowed here (it must not be empty)' : 'allowed here';
}

function range(s: Schema): string {
  const n = [s, ...(s.anyOf ?? []), ...(s.allOf ?? [])].find((x) => x.minimum !== undefined || x.maximum !== undefined);
  if (!n) {
    return '';
  }
  if (n.minimum !== undefined && n.maximum !== undefined) {
    return ` from ${n.minimum} to ${n.maximum}`;
  }
  return n.minimum !== undefined ? ` of at least ${n.minimum}` : ` of at most ${n.maximum}`;
}

/** scalar reads a plain or quoted YAML scalar as YAML 1.2's core schema does. */
export function scalar(raw: string): string | number | boolean | null {
  if ((raw.startsWith('"') && raw.endsWith('"') && raw.length > 1) || (raw.startsWith("'") && raw.endsWith("'") && raw.length > 1)) {
    return raw.slice(1, -1);
  }
  if (/^(~|null|Null|NULL)?$/.test(raw)) {
    return null;
  }
  if (/^(true|True|TRUE|false|False|FALSE)$/.test(raw)) {
    return raw.toLowerCase() === 'true';
  }
  if (/^[-+]?[0-9]+$/.test(raw)) {
    return Number(raw);
  }
  if (/^0x[0-9a-fA-F]+$/.test(raw) || /^0o[0-7]+$/.test(raw)) {
    return Number(raw);
  }
  if (/^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/.test(raw)) {
    return Number(raw);
  }
  return raw;
}

/** accepts evaluates s (the subset the config's schema uses) on a scalar. */
export function accepts(s: Schema, v: string | number | boolean | null): boolean {
  if (s.type !== undefined) {
    const ts = Array.isArray(s.type) ? s.type : [s.type];
    const ok = ts.some((t) => {
      switch (t) {
        case 'null':
          return v === null;
        case 'boolean':
          return typeof v === 'boolean';
        case 'integer':
          return typeof v === 'number' && Number.isInteger(v);
        case 'number':
          return typeof v === 'number';
        case 'string':
          return typeof v === 'string';
        default:
          return false; // object, array: not a scalar
      }
    });
    if (!ok) {
      return false;
    }
  }
  if (s.enum && !s.enum.some((e) => e === v)) {
    return false;
  }
  if (typeof v === 'string') {
    if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) {
      return false;
    }
    if (s.minLength !== undefined && [...v].length < s.minLength) {
      return false;
    }
  }
  if (typeof v === 'number') {
    if ((s.minimum !== undefined && v < s.minimum) || (s.maximum !== undefined && v > s.maximum)) {
      return false;
    }
  }
  if (s.anyOf && !s.anyOf.some((a) => accepts(a, v))) {
    return false;
  }
  if (s.allOf && !s.allOf.every((a) => accepts(a, v))) {
    return false;
  }
  if (s.not && accepts(s.not, v)) {
    return false;
  }
  return true;
}
