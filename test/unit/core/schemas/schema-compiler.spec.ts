import { performance } from 'node:perf_hooks';
import { SchemaCompiler } from '../../../../src/core/schemas/schema-compiler';

const lenient = () => new SchemaCompiler({ strict: false, allErrors: true });
const strict = () => new SchemaCompiler({ strict: true, strictTypes: false, strictTuples: false });

/** The least of three timings: the cost of the work itself, not of a busy machine. */
function fastestMs(fn: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    fn();
    best = Math.min(best, performance.now() - t0);
  }
  return best;
}

describe('SchemaCompiler', () => {
  describe('patterns run in linear time (RE2)', () => {
    const rows: [string, string, string][] = [
      ['nested quantifier ^(a+)+$', '^(a+)+$', 'a'.repeat(27) + '!'],
      ['alternation ^(a|aa)+$', '^(a|aa)+$', 'a'.repeat(42) + '!'],
      ['alternation ^(a|aa)+$, long', '^(a|aa)+$', 'a'.repeat(100_000) + '!'],
    ];
    it.each(rows)('%s against a backtracking input: refused in < 50 ms', (_n, pattern, input) => {
      const c = lenient().compile({
        type: 'object',
        properties: { s: { type: 'string', pattern } },
      });
      if (!c.ok) throw new Error('should compile');
      expect(c.validate({ s: input })).toBe(false);
      expect(fastestMs(() => c.validate({ s: input }))).toBeLessThan(50);
    });

    it('patternProperties use RE2 too', () => {
      const c = lenient().compile({
        type: 'object',
        patternProperties: { '^(a|aa)+$': { type: 'number' } },
      });
      if (!c.ok) throw new Error('should compile');
      expect(c.validate({ [`${'a'.repeat(42)}`]: 'x' })).toBe(false);
      expect(fastestMs(() => c.validate({ [`${'a'.repeat(42)}!`]: 'x' }))).toBeLessThan(50);
    });

    const semantics: [string, string, string, boolean][] = [
      ['\\d is a digit', '^\\d+$', '123', true],
      ['\\d is not a letter', '^\\d+$', '12a', false],
      ['unicode escapes', '^\\u00e9$', 'é', true],
      ['unicode classes', '^\\p{L}+$', 'héllo', true],
      ['escaped slash', '^a\\/b$', 'a/b', true],
      ['unanchored finds inside', 'b+', 'abbc', true],
    ];
    it.each(semantics)('keeps JSON Schema semantics: %s', (_n, pattern, input, ok) => {
      const c = lenient().compile({ type: 'string', pattern });
      if (!c.ok) throw new Error(JSON.stringify(c.problems));
      expect(c.validate(input)).toBe(ok);
    });

    it('two patterns in one schema each keep their own regex', () => {
      const c = lenient().compile({
        type: 'object',
        properties: { a: { pattern: '^a$' }, b: { pattern: '^b$' } },
      });
      if (!c.ok) throw new Error('should compile');
      expect(c.validate({ a: 'a', b: 'b' })).toBe(true);
      expect(c.validate({ a: 'a', b: 'a' })).toBe(false);
    });

    const refused: [string, Record<string, unknown>, string][] = [
      ['a lookahead', { properties: { s: { pattern: '^(?=a)a$' } } }, 'properties.s.pattern'],
      ['a backreference', { items: [{ pattern: '(a)\\1' }] }, 'items[0].pattern'],
      ['a lookahead key', { patternProperties: { '(?!x)': {} } }, 'patternProperties["(?!x)"]'],
      ['not a regex at all', { pattern: '(' }, 'pattern'],
    ];
    it.each(refused)('refuses %s, naming its path', (_n, schema, path) => {
      const c = lenient().compile(schema, 'parameters');
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.problems.map((p) => p.path)).toEqual([`parameters.${path}`]);
    });

    it('does not look for patterns in data keywords', () => {
      expect(lenient().compile({ const: { pattern: '(?=x)' }, enum: [{ pattern: '(' }] }).ok).toBe(
        true,
      );
    });
  });

  describe('uniqueItems stays linear, or small', () => {
    const rows: [string, Record<string, unknown>, boolean][] = [
      ['untyped items, no maxItems', { type: 'array', uniqueItems: true }, false],
      [
        'object items, maxItems 100000',
        { type: 'array', uniqueItems: true, items: { type: 'object' }, maxItems: 100_000 },
        false,
      ],
      [
        'object items, maxItems 1000',
        { type: 'array', uniqueItems: true, items: { type: 'object' }, maxItems: 1000 },
        true,
      ],
      [
        'string items (hashed)',
        { type: 'array', uniqueItems: true, items: { type: 'string' } },
        true,
      ],
      [
        'number or null items (hashed)',
        { type: 'array', uniqueItems: true, items: { type: ['number', 'null'] } },
        true,
      ],
      ['uniqueItems false', { type: 'array', uniqueItems: false }, true],
    ];
    it.each(rows)('%s → accepted: %s', (_n, schema, ok) => {
      const c = lenient().compile({ type: 'object', properties: { list: schema } }, 'parameters');
      expect(c.ok).toBe(ok);
      if (!c.ok) expect(c.problems[0].path).toBe('parameters.properties.list.uniqueItems');
    });
  });

  describe('no schema registry: $id and $ref stay inside their own document', () => {
    it('the same $id compiles again, from another compiler or the same (no "already exists")', () => {
      const a = { $id: 'orders-schema', type: 'object' };
      const compiler = strict();
      expect(compiler.compile(a).ok).toBe(true);
      expect(compiler.compile({ ...a, properties: { x: {} } }).ok).toBe(true);
      expect(strict().compile(a).ok).toBe(true);
    });

    it('a $ref to an $id another schema declared does not resolve', () => {
      const compiler = lenient();
      expect(compiler.compile({ $id: 'orders-schema', type: 'object' }).ok).toBe(true);
      const b = compiler.compile({ $ref: 'orders-schema' }, 'parameters');
      expect(b.ok).toBe(false);
      if (!b.ok) expect(b.problems[0].message).toMatch(/can't resolve reference orders-schema/);
    });

    it('a $ref inside its own document works', () => {
      const c = lenient().compile({
        type: 'object',
        definitions: { amount: { type: 'number', maximum: 10 } },
        properties: { a: { $ref: '#/definitions/amount' } },
      });
      if (!c.ok) throw new Error('should compile');
      expect(c.validate({ a: 5 })).toBe(true);
      expect(c.validate({ a: 50 })).toBe(false);
    });
  });

  describe('refusals name the path', () => {
    it('meta-schema mistakes, one per path', () => {
      const c = lenient().compile({ properties: { a: { type: 'nope' } } }, 'constraint');
      expect(c.ok).toBe(false);
      if (!c.ok) expect(c.problems.map((p) => p.path)).toEqual(['constraint.properties.a.type']);
    });
    it('an unknown $schema', () => {
      const c = lenient().compile({ $schema: 'https://example.com/mine', type: 'object' }, 'p');
      if (c.ok) throw new Error('should fail');
      expect(c.problems[0].path).toBe('p.$schema');
    });
    it('strict mode refuses unknown keywords', () => {
      expect(strict().compile({ properties: { a: { maximun: 1 } } }).ok).toBe(false);
      expect(lenient().compile({ properties: { a: { maximun: 1 } } }).ok).toBe(true);
    });
    it('a cached refusal is reported under the new base path', () => {
      const compiler = lenient();
      compiler.compile({ pattern: '(' }, 'a');
      const again = compiler.compile({ pattern: '(' }, 'b');
      if (again.ok) throw new Error('should fail');
      expect(again.problems[0].path).toBe('b.pattern');
    });
  });
});
