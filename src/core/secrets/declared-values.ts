import type { SecretValue } from './redactor';

/**
 * Values declared for a call (http tool headers, an MCP server's env, headers and arguments): what of
 * them may be shown, and which of their text is secret material a call's output must not carry. A
 * `${NAME}` reference is a name, never a value, so it is shown as written; literal text beside it is
 * shown only when it cannot be a credential (punctuation, a leading auth scheme such as `Bearer `).
 */

/** `${NAME}`; in `split`, the references land at the odd indices. */
const REF = /(\$\{[A-Za-z_][A-Za-z0-9_]*\})/;
/** An auth scheme before the first reference (`Bearer `, `Basic `, `Token `). */
const SCHEME = /^[A-Za-z]{1,16} +$/;
/** Literal text with no letter or digit: separators (`:`, `/`, `; `), never a credential. */
const NO_TEXT = /^[^A-Za-z0-9]*$/;
/** Names of entries and flags whose literal value is a credential. */
const CREDENTIAL_NAME =
  /auth|key|token|secret|pass|pwd|cookie|credential|signature|session|private/i;

/**
 * A name that says its value is a credential (`API_KEY`, `--token`). An MCP server's env is the
 * configuration of a process (`TOOL_PREFIX`, a data folder) that its tool names and results repeat:
 * of it, only such names' literal values are scrubbed.
 */
export const credentialNamed = (name: string): boolean => CREDENTIAL_NAME.test(name);

const MASK = '[redacted]';

const plain = (text: string, index: number) =>
  NO_TEXT.test(text) || (index === 0 && SCHEME.test(text));

/** A value as it may be shown: references as written, other literal text `[redacted]`. */
export function shownValue(value: string): string {
  const parts = value.split(REF);
  if (parts.length === 1) return MASK;
  return parts.map((p, i) => (i % 2 === 1 || plain(p, i) ? p : MASK)).join('');
}

/** Holds references and nothing secret of its own: shown exactly as written. */
export const referencesOnly = (value: string): boolean =>
  REF.test(value) && shownValue(value) === value;

/** A map of values as they may be shown. */
export function shownValues(values: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([k, v]) => [k, shownValue(v)]));
}

/**
 * Values sent back as they were read keep what could not be read: each that equals what the stored
 * value of its name shows (and is not that value itself) is the stored value.
 */
export function keepUnread(
  sent: Record<string, string>,
  stored: Record<string, string>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(sent).map(([k, v]) => {
      const was = Object.hasOwn(stored, k) ? stored[k] : undefined;
      return [k, was !== undefined && v !== was && v === shownValue(was) ? was : v];
    }),
  );
}

/**
 * Command-line arguments as they may be shown to other parties: the value of a credential-named flag
 * (`--api-key X`, `--token=X`) is `[redacted]`.
 */
export function shownArgs(args: readonly string[]): string[] {
  return args.map((a, i) => {
    const inline = /^(--?[\w.-]+=)/.exec(a);
    if (inline && credentialNamed(inline[1])) return inline[1] + MASK;
    const flag = i > 0 ? args[i - 1] : '';
    return /^--?[\w.-]+$/.test(flag) && credentialNamed(flag) && !a.startsWith('-') ? MASK : a;
  });
}

/** The literal text a value hides when shown; after a leading auth scheme, also the rest alone. */
function hiddenText(value: string): string[] {
  const out: string[] = [];
  value.split(REF).forEach((p, i) => {
    if (i % 2 === 1 || plain(p, i)) return;
    const text = p.trim();
    out.push(text);
    const afterScheme = i === 0 ? /^[A-Za-z]{1,16} +(\S.*)$/.exec(text) : null;
    if (afterScheme) out.push(afterScheme[1]);
  });
  return out;
}

/**
 * The literal text a call sends with these declared values, each as it is hidden when shown, labelled
 * by the entry's name; of the entries `named` takes (all: a header's name does not tell a key from
 * other text, `X-Partner: sk-…`). The declaration's author may not have meant a tenant to read it (an
 * operator's file): scrub it first.
 */
export function literalValuesOf(
  declared: Record<string, string>,
  named: (name: string) => boolean = () => true,
): SecretValue[] {
  return Object.entries(declared)
    .filter(([name]) => named(name))
    .flatMap(([name, v]) => hiddenText(v).map((value) => ({ label: name, value })));
}

/** Each `${NAME}` value a call resolved for these declared values, labelled NAME. */
export function referencedValuesOf(
  declared: Record<string, string>,
  resolved: Record<string, string>,
): SecretValue[] {
  return Object.values(declared).flatMap((v) =>
    v
      .split(REF)
      .filter((p, i) => i % 2 === 1 && Object.hasOwn(resolved, p.slice(2, -1)))
      .map((p) => ({ label: p.slice(2, -1), value: resolved[p.slice(2, -1)] })),
  );
}

/** The values of credential-named flags in command-line arguments (labelled by the flag). */
export function secretArgsOf(args: readonly string[]): SecretValue[] {
  const shown = shownArgs(args);
  return args.flatMap((a, i) => {
    if (shown[i] === a) return [];
    const inline = /^(--?[\w.-]+)=(.*)$/.exec(a);
    return inline
      ? [{ label: inline[1].replace(/^-+/, ''), value: inline[2] }]
      : [{ label: args[i - 1].replace(/^-+/, ''), value: a }];
  });
}
