import {
  DEFAULT_MAX_SCHEMA_EXPANSION,
  SchemaCompiler,
  setMaxSchemaExpansion,
} from '../../../../src/core/schemas/schema-compiler';

const lenient = () => new SchemaCompiler({ strict: false, allErrors: true });
const strict = () => new SchemaCompiler({ strict: true, strictTypes: false, strictTuples: false });

describe('SchemaCompiler', () => {
  describe('patterns run in linear time (RE2)', () => {
    const rows: [string, string, string][] = [
      ['nested quantifier ^(a+)+$', '^(a+)+$', 'a'.repeat(27) + '!'],
      ['alternation ^(a|aa)+$', '^(a|aa)+$', 'a'.repeat(42) + '!'],
      ['alternation ^(a|aa)+$, long', '^(a|aa)+$', 'a'.repeat(100_000) + '!'],
    ];
    it.each(rows)(
      '%s against a backtracking input: refused (a backtracking engine would not finish)',
      (_n, pattern, input) => {
        const c = lenient().compile({
          type: 'object',
          properties: { s: { type: 'string', pattern } },
        });
        if (!c.ok) throw new Error('should compile');
        expect(c.validate({ s: input })).toBe(false);
      },
    );

    it('patternProperties use RE2 too', () => {
      const c = lenient().compile({
        type: 'object',
        patternProperties: { '^(a|aa)+$': { type: 'number' } },
      });
      if (!c.ok) throw new Error('should compile');
      expect(c.validate({ [`${'a'.repeat(42)}`]: 'x' })).toBe(false);
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

describe('SchemaCompiler: $ref / anyOf fan-out is bounded (limits.max_schema_expansion)', () => {
  /** d0 … d(n-1) each anyOf two $refs to the next: 2^n evaluations in about 60 bytes per level. */
  const chain = (n: number, leaf: Record<string, unknown> = { type: 'string' }) => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < n; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    defs[`d${n}`] = leaf;
    return { type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs };
  };

  it('the 2^21 chain (1.4 KB) is refused at compile, naming the setting', () => {
    const c = lenient().compile(chain(21), 'parameters');
    if (c.ok) throw new Error('should be refused');
    expect(c.problems[0]).toMatchObject({
      path: 'parameters',
      limit: 'limits.max_schema_expansion',
    });
  });

  it('a short chain (2^8) compiles and validates', () => {
    const c = lenient().compile(chain(8));
    if (!c.ok) throw new Error(JSON.stringify(c.problems));
    expect(c.validate({ x: 'a' })).toBe(true);
    expect(c.validate({ x: 1 })).toBe(false);
  });

  it('a recursive tree (once per level of data) is accepted', () => {
    const node = {
      type: 'object',
      properties: {
        left: { $ref: '#/$defs/node' },
        right: { $ref: '#/$defs/node' },
        children: { type: 'array', items: { $ref: '#/$defs/node' } },
      },
    };
    const tree = { $defs: { node }, $ref: '#/$defs/node' };
    const c = lenient().compile(tree);
    if (!c.ok) throw new Error(JSON.stringify(c.problems));
    expect(c.validate({ left: { right: { children: [{}, { left: {} }] } } })).toBe(true);
  });

  it('a JSON-value schema (anyOf object | array | scalar, recursive) is accepted', () => {
    const value = {
      anyOf: [
        { type: ['string', 'number', 'boolean', 'null'] },
        { type: 'array', items: { $ref: '#/$defs/value' } },
        { type: 'object', additionalProperties: { $ref: '#/$defs/value' } },
      ],
    };
    const c = lenient().compile({ $defs: { value }, $ref: '#/$defs/value' });
    if (!c.ok) throw new Error(JSON.stringify(c.problems));
    expect(c.validate({ a: [1, { b: null }] })).toBe(true);
  });

  it('recursion that applies itself twice to the same child is exponential in data depth: refused', () => {
    const node = {
      type: 'object',
      properties: { a: { anyOf: [{ $ref: '#/$defs/node' }, { $ref: '#/$defs/node' }] } },
    };
    const c = lenient().compile({ $defs: { node }, $ref: '#/$defs/node' });
    if (c.ok) throw new Error('should be refused');
    expect(c.problems[0].limit).toBe('limits.max_schema_expansion');
  });

  it('branches that descend into different properties cost the dearest, not their sum: an and/or filter is accepted', () => {
    const Filter = {
      anyOf: [
        { type: 'object', properties: { field: { type: 'string' } } },
        {
          type: 'object',
          properties: { and: { type: 'array', items: { $ref: '#/$defs/Filter' } } },
        },
        {
          type: 'object',
          properties: { or: { type: 'array', items: { $ref: '#/$defs/Filter' } } },
        },
      ],
    };
    const c = lenient().compile({ $defs: { Filter }, $ref: '#/$defs/Filter' });
    if (!c.ok) throw new Error(JSON.stringify(c.problems));
    expect(c.validate({ and: [{ or: [{ field: 'x' }] }, { field: 'y' }] })).toBe(true);
  });

  it('branches that all descend into the same property (a union without a required, early discriminator) are refused', () => {
    const variant = (op: string) => ({
      type: 'object',
      properties: {
        op: { const: op },
        conditions: { type: 'array', items: { $ref: '#/$defs/C' } },
      },
    });
    const c = lenient().compile({
      $defs: { C: { oneOf: [variant('and'), variant('or')] } },
      $ref: '#/$defs/C',
    });
    if (c.ok) throw new Error('should be refused');
    expect(c.problems[0].limit).toBe('limits.max_schema_expansion');
  });

  it('a $ref cycle that never descends into the data is refused (it would never end)', () => {
    const c = lenient().compile({
      $defs: { a: { anyOf: [{ $ref: '#/$defs/a' }] } },
      $ref: '#/$defs/a',
    });
    if (c.ok) throw new Error('should be refused');
    expect(c.problems[0].message).toMatch(/cycle/);
  });

  it('a nested $id (which would re-base a $ref) is refused beside a $ref', () => {
    const c = lenient().compile({
      type: 'object',
      properties: { a: { $id: 'http://x/a', $ref: '#/definitions/b', definitions: { b: {} } } },
    });
    expect(c.ok).toBe(false);
  });

  it('the bound is a setting', () => {
    setMaxSchemaExpansion(100_000_000);
    try {
      expect(lenient().compile(chain(21)).ok).toBe(true);
    } finally {
      setMaxSchemaExpansion(DEFAULT_MAX_SCHEMA_EXPANSION);
    }
  });
});
