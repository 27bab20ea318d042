/** A secret value one call used, and the label its marker names (`[redacted:LABEL]`). */
export interface SecretValue {
  label: string;
  value: string;
}

export type Redact = (text: string) => string;

/** Shorter values are not replaced: they would take ordinary text with them. */
const MIN_CHARS = 4;
/** A base64 fragment of a value inside a longer base64 text, at least this long to be replaced. */
const MIN_FRAGMENT_CHARS = 8;
/** How much of a form the native search looks for first: short enough to stay linear. */
const PROBE_CHARS = 16;

/**
 * Replaces every secret value a call used, in the forms an echo shows it, by `[redacted:LABEL]`: as
 * sent; escaped as JSON (`\"`, `\/`, `\u003c`), HTML (`&quot;`, `&#34;`) or a URL (`%22`, `%2f`, `+`)
 * escapes it; as base64 (whole, or inside a Basic credential a service builds around it, at any
 * alignment); and, for a value that is base64 of text (a Basic credential), decoded, and its password
 * alone. Of forms found at the same place the longest wins, so a value inside another is not half
 * replaced; forms that overlap are replaced together, so no part of one is left. Plain string search in
 * linear time, never a pattern built from a value: the cost stays linear whatever a tenant makes its
 * secret and its echo. Apply once, before any cut.
 *
 * Each further group of values is replaced in what the groups before left. Values a tenant may not
 * read go first, values it may choose after: a chosen value then never matches across part of a hidden
 * one, so whether it was replaced tells nothing about the hidden one.
 */
export function redactor(...groups: readonly (readonly SecretValue[])[]): Redact {
  const passes = groups.map(redactorOf).filter((r) => r !== null);
  return (text) => passes.reduce((t, redact) => redact(t), text);
}

function redactorOf(secrets: readonly SecretValue[]): Redact | null {
  const labels = new Map<string, string>();
  for (const s of secrets)
    for (const form of forms(s.value)) if (!labels.has(form)) labels.set(form, s.label);
  if (labels.size === 0) return null;
  const ordered = [...labels].sort((a, b) => b[0].length - a[0].length);
  return (text) => {
    // per place, the longest form that starts there (`ordered` is longest first)
    let at: Int32Array | null = null;
    ordered.forEach(([form], i) => {
      // a form is searched for only where its first characters are (the common case: nowhere)
      if (!text.includes(form.slice(0, PROBE_CHARS))) return;
      occurrences(text, form, (start) => {
        at ??= new Int32Array(text.length).fill(-1);
        if (at[start] === -1) at[start] = i;
      });
    });
    if (at === null) return text;
    const found: Int32Array = at;
    let out = '';
    let pos = 0;
    for (let start = 0; start < text.length; start++) {
      const i = found[start];
      if (i === -1) continue;
      const end = start + ordered[i][0].length;
      // one that starts inside the last replaced stretch and goes on lengthens it
      if (start < pos) pos = Math.max(pos, end);
      else {
        out += `${text.slice(pos, start)}[redacted:${ordered[i][1]}]`;
        pos = end;
      }
    }
    return out + text.slice(pos);
  };
}

/**
 * Calls `found` with every place `pattern` starts in `text`: Knuth-Morris-Pratt, linear in both whatever
 * they hold (String.indexOf takes time in their product for some: `a…ab…a` in `a…a`).
 */
function occurrences(text: string, pattern: string, found: (start: number) => void): void {
  const m = pattern.length;
  const fallback = new Int32Array(m);
  for (let i = 1, k = 0; i < m; i++) {
    while (k > 0 && pattern.charCodeAt(i) !== pattern.charCodeAt(k)) k = fallback[k - 1];
    if (pattern.charCodeAt(i) === pattern.charCodeAt(k)) k++;
    fallback[i] = k;
  }
  for (let i = 0, k = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    while (k > 0 && c !== pattern.charCodeAt(k)) k = fallback[k - 1];
    if (c === pattern.charCodeAt(k)) k++;
    if (k === m) {
      found(i - m + 1);
      k = fallback[k - 1];
    }
  }
}

/** How services escape a value they repeat: JSON, HTML and URL encoders' usual choices. */
const ESCAPES: ((v: string) => string)[] = [
  (v) => v,
  json,
  (v) => json(v).replace(/\//g, '\\/'),
  (v) => json(v).replace(/[<>&']/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`),
  ...["'", '&#39;', '&#039;', '&#x27;'].flatMap((apos) => [
    (v: string) => html(v, { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": apos }),
    (v: string) => html(v, { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&#34;', "'": apos }),
  ]),
  (v) => html(v, { '&': '&#38;', '<': '&#60;', '>': '&#62;', '"': '&#34;', "'": '&#39;' }),
  (v) => html(v, { '&': '&amp;', '<': '&lt;', '>': '&gt;' }),
  encodeURIComponent,
  (v) => encodeURIComponent(v).replace(/%[0-9A-F]{2}/g, (h) => h.toLowerCase()),
  (v) => encodeURIComponent(v).replace(/%20/g, '+'),
  encodeURI,
];

function json(v: string): string {
  return JSON.stringify(v).slice(1, -1);
}

function html(v: string, entities: Record<string, string>): string {
  return v.replace(/[&<>"']/g, (c) => entities[c] ?? c);
}

function forms(value: string): string[] {
  if (value.length < MIN_CHARS) return [];
  const decoded = decodedBase64(value);
  const texts = [value, ...(decoded ? [decoded, decoded.slice(decoded.indexOf(':') + 1)] : [])];
  return [
    ...texts.filter((t) => t.length >= MIN_CHARS).flatMap((t) => ESCAPES.map((e) => e(t))),
    ...base64Forms(Buffer.from(value, 'utf8')),
  ];
}

/**
 * The value as base64, whole (padded), and the part of it that any base64 text holding the value after
 * 0, 1 or 2 other bytes shows (the characters that mix in neighbouring bytes left out); each also in
 * the URL-safe alphabet.
 */
function base64Forms(bytes: Buffer): string[] {
  const out = [bytes.toString('base64')];
  for (let k = 0; k < 3; k++) {
    const text = Buffer.concat([Buffer.alloc(k), bytes])
      .toString('base64')
      .replace(/=+$/, '');
    const start = [0, 2, 3][k];
    const end = text.length - ((k + bytes.length) % 3 === 0 ? 0 : 1);
    const fragment = text.slice(start, end);
    if (fragment.length >= MIN_FRAGMENT_CHARS) out.push(fragment);
  }
  return out.flatMap((f) => [f, f.replace(/\+/g, '-').replace(/\//g, '_')]);
}

/** A value that is base64 of printable text (a Basic credential), decoded; else null. */
function decodedBase64(value: string): string | null {
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) return null;
  const text = Buffer.from(value, 'base64').toString('utf8');
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f\uFFFD]/.test(text)) return null;
  return Buffer.from(text, 'utf8').toString('base64') === value ? text : null;
}
