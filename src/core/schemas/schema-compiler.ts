import Ajv, { type Options, type ValidateFunction } from 'ajv';
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/**
 * Compiles tenant JSON Schemas (tool `parameters`, grant constraints) so that no tenant can hurt the
 * process or reach another tenant:
 * - `pattern` and `patternProperties` run on RE2 (linear time), so no input can make a regex backtrack;
 *   a pattern RE2 cannot express (lookahead, backreference) is refused, with its path; `uniqueItems`
 *   on items Ajv compares pairwise (objects, arrays, untyped: quadratic) needs a `maxItems` bound;
 * - each schema gets its own Ajv instance, dropped after compiling: no `$id` is ever registered, so a
 *   `$ref` reaches only its own document, and nothing (schemas, ids, regex scope) accumulates per compile;
 * - compiled functions are cached by schema text in a bounded LRU: memory stays flat whatever tenants
 *   create and delete (identical text compiles to identical code, so sharing the cache is safe).
 */
export class SchemaCompiler {
  private readonly cache: LRUCache<string, Compiled>;

  constructor(
    private readonly options: Pick<
      Options,
      'strict' | 'strictTypes' | 'strictTuples' | 'allErrors'
    >,
    maxCached = 1000,
  ) {
    this.cache = new LRUCache({ max: maxCached });
  }

  /** The compiled validator, or the problems (paths under `basePath`) that refuse the schema. */
  compile(schema: Record<string, unknown>, basePath = ''): Compiled {
    const text = JSON.stringify(schema);
    const hit = this.cache.get(text);
    if (hit) return hit.ok ? hit : { ok: false, problems: rebase(hit.problems, basePath) };
    const compiled = this.compileFresh(schema);
    this.cache.set(text, compiled);
    return compiled.ok ? compiled : { ok: false, problems: rebase(compiled.problems, basePath) };
  }

  private compileFresh(schema: Record<string, unknown>): Compiled {
    const costly = costProblems(schema, '');
    if (costly.length) return { ok: false, problems: costly };
    let valid: boolean;
    try {
      valid = metaAjv().validateSchema(schema) as boolean;
    } catch (e) {
      // an unknown $schema
      return { ok: false, problems: [{ path: '$schema', message: (e as Error).message }] };
    }
    if (!valid) {
      // one problem per path: the meta-schema's anyOf branches repeat each mistake
      const byPath = new Map<string, string>();
      for (const e of metaAjv().errors ?? [])
        if (!byPath.has(e.instancePath)) byPath.set(e.instancePath, e.message ?? 'is invalid');
      return {
        ok: false,
        problems: [...byPath].map(([pointer, message]) => ({
          path: jsonPointerToPath(pointer),
          message: `is not a valid JSON Schema: ${message}`,
        })),
      };
    }
    try {
      const ajv = new Ajv({
        ...this.options,
        allowUnionTypes: true,
        validateSchema: false, // done above against the shared meta-schema
        meta: false, // (adding the meta-schema to every instance would double the cost of a compile)
        addUsedSchema: false,
        code: { regExp: re2Engine },
      });
      const validate = ajv.compile(schema); // first: a $ref Ajv cannot resolve is named by Ajv
      // compiling is linear in the text, validating is not: refuse what would fan out
      const fanOut = expansionProblem(schema, schemaLimits.maxExpansion);
      if (fanOut) return { ok: false, problems: [fanOut] };
      return { ok: true, validate };
    } catch (e) {
      return {
        ok: false,
        problems: [{ path: '', message: `is not a valid JSON Schema: ${(e as Error).message}` }],
      };
    }
  }
}

export type Compiled =
  { ok: true; validate: ValidateFunction } | { ok: false; problems: ValidationProblem[] };

/** One line for a refused schema (for texts that have no room for a list). */
export const describeProblems = (problems: ValidationProblem[]): string =>
  problems.map((p) => (p.path ? `${p.path} ${p.message}` : p.message)).join('; ');

/** Ajv's `code.regExp` engine: RE2 with the JavaScript syntax JSON Schema uses translated. */
function re2Engine(pattern: string, u: string): { test(s: string): boolean; toString(): string } {
  const re = RE2JS.compile(RE2JS.translateRegExp(pattern));
  // Ajv keys compiled patterns by toString(): it must be unique per pattern
  return { test: (s) => re.test(s), toString: () => `/${pattern}/${u}` };
}
re2Engine.code = 'require("re2js").RE2JS.compile'; // only used by Ajv's standalone code, which we never emit

/** The default of `limits.max_schema_expansion`. */
export const DEFAULT_MAX_SCHEMA_EXPANSION = 10_000;
/** Data depth the expansion estimate looks through (a deeper argument costs one more level each). */
const EXPANSION_DEPTH = 64;

/** Process-wide: set once at boot from `limits.max_schema_expansion` (ConfigModule). */
const schemaLimits = { maxExpansion: DEFAULT_MAX_SCHEMA_EXPANSION };
export function setMaxSchemaExpansion(max: number): void {
  schemaLimits.maxExpansion = max;
}

/** Keywords applying a subschema to the same value. */
const SAME_ARRAY = ['allOf', 'anyOf', 'oneOf'];
const SAME_ONE = ['not', 'if', 'then', 'else'];

/**
 * A bound on the subschema evaluations one validation makes, refused past `max`: `$ref`s and
 * `anyOf`/`oneOf`/`allOf`/`not`/`if` branches are unfolded (memoised per subschema and remaining data
 * depth), so a chain of `{anyOf: [{$ref: next}, {$ref: next}]}` counts 2^n however small its text, and a
 * `$ref` cycle costs what it costs per level of data, up to EXPANSION_DEPTH levels: a recursive schema
 * that applies itself once per level (a tree) is linear, one that applies itself twice to the same value
 * is exponential and refused, one that applies itself to the same value without descending never ends
 * and is refused. For a value, the cost is its own subschemas plus the dearest one child can cost (as an
 * object: a property with the patternProperties, or any other name with additionalProperties, summed over
 * the branches by name; as an array: an item, contains).
 * Only `#`/`#/…` pointers are followed; a nested `$id` (which would re-base them) is refused beside a `$ref`.
 */
export function expansionProblem(schema: unknown, max: number): ValidationProblem | null {
  const text = JSON.stringify(schema);
  if (!text.includes('"$ref"')) return null; // without $ref the cost is the tree's own size, bounded by bytes
  const over = max + 1;
  const memo = new Map<object, Map<number, Cost | null>>();
  let problem: ValidationProblem | null = null;
  const refuse = (message: string): Cost => {
    problem ??= { path: '', message };
    return { local: over, obj: { named: new Map(), wild: 0 }, arr: 0 };
  };
  const resolve = (ref: string): unknown => {
    if (ref === '#') return schema;
    if (!ref.startsWith('#/')) return undefined;
    let node: unknown = schema;
    for (const raw of ref.slice(2).split('/')) {
      const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
      if (typeof node !== 'object' || node === null) return undefined;
      node = (node as Record<string, unknown>)[key];
    }
    return node;
  };
  const sat = (n: number) => Math.min(n, over);
  const total = (c: Cost) => {
    let child = Math.max(c.obj.wild, c.arr);
    for (const v of c.obj.named.values()) child = Math.max(child, v);
    return sat(c.local + child);
  };
  const cost = (node: unknown, depth: number, root: boolean): Cost => {
    if (problem) return { local: over, obj: { named: new Map(), wild: 0 }, arr: 0 };
    if (typeof node !== 'object' || node === null || Array.isArray(node))
      return { local: 1, obj: { named: new Map(), wild: 0 }, arr: 0 };
    let byDepth = memo.get(node);
    if (!byDepth) memo.set(node, (byDepth = new Map<number, Cost | null>()));
    const seen = byDepth.get(depth);
    if (seen === null)
      return refuse(
        'has a $ref cycle that applies a subschema to the same value again (it never ends)',
      );
    if (seen) return seen;
    byDepth.set(depth, null);
    const o = node as Record<string, unknown>;
    if (!root && typeof o.$id === 'string')
      return refuse('may declare $id only at its root when it uses $ref');
    const below = (child: unknown) => (depth > 0 ? total(cost(child, depth - 1, false)) : 0);
    // this node's own keywords first: one object child by name (its property and the patterns, which
    // apply to named properties too) or any other name (patterns and additionalProperties)
    let patterns = 0;
    if (isPlainObject(o.patternProperties))
      for (const c of Object.values(o.patternProperties)) patterns += below(c);
    for (const k of ['unevaluatedProperties', 'propertyNames']) if (k in o) patterns += below(o[k]);
    const named = new Map<string, number>();
    if (isPlainObject(o.properties))
      for (const [k, c] of Object.entries(o.properties)) named.set(k, sat(below(c) + patterns));
    const wild = sat(patterns + ('additionalProperties' in o ? below(o.additionalProperties) : 0));
    // one array item: its tuple schema or items, additionalItems, contains
    let oneItem = 0;
    for (const k of ['items', 'prefixItems'])
      if (Array.isArray(o[k]))
        for (const c of o[k] as unknown[]) oneItem = Math.max(oneItem, below(c));
      else if (k in o) oneItem += below(o[k]);
    for (const k of ['additionalItems', 'unevaluatedItems', 'contains'])
      if (k in o) oneItem += below(o[k]);
    const out: Cost = { local: 1, obj: { named, wild }, arr: oneItem };
    // subschemas applied to the same value add up, key by key: branches that descend into different
    // properties (an and/or filter's `and` and `or`) cost the dearest of them, not their sum
    const same = (child: unknown) => {
      const c = cost(child, depth, false);
      out.local = sat(out.local + c.local);
      out.arr = sat(out.arr + c.arr);
      const keys = new Set([...out.obj.named.keys(), ...c.obj.named.keys()]);
      const merged = new Map<string, number>();
      for (const k of keys)
        merged.set(
          k,
          sat((out.obj.named.get(k) ?? out.obj.wild) + (c.obj.named.get(k) ?? c.obj.wild)),
        );
      out.obj = { named: merged, wild: sat(out.obj.wild + c.obj.wild) };
    };
    if (typeof o.$ref === 'string') {
      const target = resolve(o.$ref);
      if (target !== undefined) same(target);
      else
        return refuse(
          `has $ref ${JSON.stringify(o.$ref)}: only JSON pointers inside the schema (# or #/…) are allowed`,
        );
    }
    for (const k of SAME_ARRAY) if (Array.isArray(o[k])) for (const c of o[k] as unknown[]) same(c);
    for (const k of SAME_ONE) if (k in o) same(o[k]);
    for (const k of ['dependencies', 'dependentSchemas'])
      if (isPlainObject(o[k])) for (const c of Object.values(o[k])) if (!Array.isArray(c)) same(c);
    byDepth.set(depth, out);
    return out;
  };
  let estimate: number;
  try {
    estimate = total(cost(schema, EXPANSION_DEPTH, true));
  } catch (e) {
    if (!(e instanceof RangeError)) throw e;
    return { path: '', message: 'nests $ref too deeply to estimate its cost' };
  }
  if (problem) return problem;
  if (estimate > max)
    return {
      path: '',
      message: `expands to more than ${max} subschema evaluations per value through $ref and anyOf/oneOf/allOf branches (limits.max_schema_expansion)`,
      limit: 'limits.max_schema_expansion',
    };
  return null;
}

interface Cost {
  /** Subschema evaluations on the value itself. */
  local: number;
  /** What one child costs, if the value is an object: by property name, and any other name. */
  obj: { named: Map<string, number>; wild: number };
  /** The dearest item, if the value is an array. */
  arr: number;
}

const isPlainObject = (v: unknown): v is object =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose values are data, not schemas: never searched for patterns. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/** Pairwise `uniqueItems` over more items than this is refused (it is quadratic in the array's length). */
export const MAX_PAIRWISE_UNIQUE_ITEMS = 1000;

/**
 * Every keyword whose cost an input could make super-linear, with its path inside the schema: a `pattern`
 * or `patternProperties` key RE2 refuses, a pairwise `uniqueItems` without a small `maxItems`.
 */
function costProblems(node: unknown, path: string): ValidationProblem[] {
  if (typeof node !== 'object' || node === null) return [];
  if (Array.isArray(node)) return node.flatMap((v, i) => costProblems(v, `${path}[${i}]`));
  const out: ValidationProblem[] = [];
  const o = node as Record<string, unknown>;
  const at = (k: string) => (path ? `${path}.${k}` : k);
  if (typeof o.pattern === 'string') {
    const why = re2Refusal(o.pattern);
    if (why) out.push({ path: at('pattern'), message: why });
  }
  const pp = o.patternProperties;
  if (typeof pp === 'object' && pp !== null && !Array.isArray(pp)) {
    for (const key of Object.keys(pp)) {
      const why = re2Refusal(key);
      if (why)
        out.push({ path: `${at('patternProperties')}[${JSON.stringify(key)}]`, message: why });
    }
  }
  if (o.uniqueItems === true && !scalarItems(o.items)) {
    const max = o.maxItems;
    if (typeof max !== 'number' || max > MAX_PAIRWISE_UNIQUE_ITEMS)
      out.push({
        path: at('uniqueItems'),
        message: `needs maxItems of at most ${MAX_PAIRWISE_UNIQUE_ITEMS} unless items have a scalar type (it compares every pair)`,
      });
  }
  for (const [k, v] of Object.entries(o))
    if (!DATA_KEYWORDS.has(k)) out.push(...costProblems(v, at(k)));
  return out;
}

/** Ajv checks uniqueness of scalar-typed items with a hash (linear); anything else pair by pair. */
function scalarItems(items: unknown): boolean {
  if (typeof items !== 'object' || items === null || Array.isArray(items)) return false;
  const type = (items as Record<string, unknown>).type;
  const types = Array.isArray(type) ? type : [type];
  return (
    types.length > 0 &&
    types.every((t) => ['string', 'number', 'integer', 'boolean', 'null'].includes(t as string))
  );
}

function re2Refusal(pattern: string): string | null {
  try {
    re2Engine(pattern, 'u');
    return null;
  } catch (e) {
    return `is not a pattern this server evaluates (RE2 syntax, no lookaround or backreferences): ${(e as Error).message}`;
  }
}

function rebase(problems: ValidationProblem[], basePath: string): ValidationProblem[] {
  if (!basePath) return problems;
  return problems.map((p) => ({
    ...p,
    path: !p.path ? basePath : p.path.startsWith('[') ? basePath + p.path : `${basePath}.${p.path}`,
  }));
}

const jsonPointerToPath = (pointer: string): string =>
  pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : i === 0 ? s : `.${s}`))
    .join('');

let meta: Ajv | null = null;
/** Validates schemas against the draft-07 meta-schema; compiles no tenant schema, so it holds none. */
function metaAjv(): Ajv {
  meta ??= new Ajv({ strict: false, validateFormats: false });
  return meta;
}
