/**
 * An argument constraint built from a call's own arguments: "amount ≤ 50", "to ends with @example.com".
 * It becomes the JSON Schema a grant carries; the server checks later calls against it.
 */
export type Op = 'max' | 'min' | 'eq' | 'prefix' | 'suffix';

export interface Condition {
  field: string;
  op: Op;
  value: string;
}

export const OPS_FOR: Record<'number' | 'string' | 'boolean', { op: Op; label: string }[]> = {
  number: [
    { op: 'max', label: '≤' },
    { op: 'min', label: '≥' },
    { op: 'eq', label: '=' },
  ],
  string: [
    { op: 'eq', label: 'equals' },
    { op: 'suffix', label: 'ends with' },
    { op: 'prefix', label: 'starts with' },
  ],
  boolean: [{ op: 'eq', label: 'is' }],
};

export type Kind = keyof typeof OPS_FOR;

/** The top-level arguments a condition can be made of (numbers, strings, booleans). */
export function constrainable(
  args: Record<string, unknown>,
): { field: string; kind: Kind; value: unknown }[] {
  return Object.entries(args)
    .filter(([, v]) => ['number', 'string', 'boolean'].includes(typeof v))
    .map(([field, value]) => ({ field, kind: typeof value as Kind, value }));
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

function keyword(kind: Kind, c: Condition): Record<string, unknown> | string {
  if (kind === 'number') {
    const n = Number(c.value);
    if (c.value.trim() === '' || !Number.isFinite(n)) return `${c.field}: enter a number`;
    // the type too: a bound alone holds for any non-number, so "amount ≤ 50" would cover "50000" (text)
    // for a tool whose schema takes either
    const bound = c.op === 'max' ? { maximum: n } : c.op === 'min' ? { minimum: n } : { const: n };
    return { type: 'number', ...bound };
  }
  if (kind === 'boolean') return { const: c.value === 'true' };
  if (c.op === 'prefix') return { type: 'string', pattern: `^${escapeRe(c.value)}` };
  if (c.op === 'suffix') return { type: 'string', pattern: `${escapeRe(c.value)}$` };
  return { const: c.value };
}

/** The schema of the chosen conditions (null: none), or the problems that keep it from being one. */
export function toSchema(
  conditions: Condition[],
  kinds: Record<string, Kind>,
): { schema: Record<string, unknown> | null; problems: string[] } {
  if (conditions.length === 0) return { schema: null, problems: [] };
  const properties: Record<string, Record<string, unknown>> = {};
  const problems: string[] = [];
  for (const c of conditions) {
    const k = keyword(kinds[c.field], c);
    if (typeof k === 'string') problems.push(k);
    else properties[c.field] = { ...(properties[c.field] ?? {}), ...k };
  }
  const required = [...new Set(conditions.map((c) => c.field))];
  return { schema: { type: 'object', properties, required }, problems };
}

/** The condition a person most likely means for an argument: "at most this amount", "this exact text". */
export function defaultCondition(field: string, kind: Kind, value: unknown): Condition {
  if (kind === 'string') {
    const s = String(value);
    const at = s.lastIndexOf('@');
    return at > 0 ? { field, op: 'suffix', value: s.slice(at) } : { field, op: 'eq', value: s };
  }
  return { field, op: kind === 'number' ? 'max' : 'eq', value: String(value) };
}
