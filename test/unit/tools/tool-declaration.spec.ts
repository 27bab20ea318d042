import { resolveHeaders, validateToolDeclaration } from '../../../src/tools/tool-declaration';
import { LIMITS } from '../../support/input-limits';

const good = {
  name: 'issue_refund',
  description: 'Refunds an order',
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'string' } },
    required: ['order_id'],
  },
  safety: 'side_effecting',
  kind: 'http',
  http: {
    url: 'http://127.0.0.1:9/refund',
    method: 'post',
    headers: { Authorization: 'Bearer ${REFUND_TOKEN}' },
    timeout_ms: 5000,
  },
};

describe('validateToolDeclaration', () => {
  it('accepts a full http declaration (method upper-cased, placeholders kept)', () => {
    const { tool, problems } = validateToolDeclaration(good, LIMITS);
    expect(problems).toEqual([]);
    expect(tool?.http).toEqual({ ...good.http, method: 'POST' });
  });

  it('defaults parameters to an empty object schema', () => {
    const { parameters: _p, ...rest } = good;
    expect(validateToolDeclaration(rest, LIMITS).tool?.parameters).toEqual({
      type: 'object',
      properties: {},
    });
  });

  it("reads null description and parameters as not given, as Letta's ToolCreate", () => {
    const { tool, problems } = validateToolDeclaration(
      { ...good, description: null, parameters: null },
      LIMITS,
    );
    expect(problems).toEqual([]);
    expect(tool).toMatchObject({ description: '', parameters: { type: 'object', properties: {} } });
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ['bad name', { name: 'has space' }, 'name'],
    ['missing name', { name: undefined }, 'name'],
    ['unknown safety', { safety: 'risky' }, 'safety'],
    ['builtin kind', { kind: 'builtin' }, 'kind'],
    ['unknown kind', { kind: 'python' }, 'kind'],
    ['parameters not object type', { parameters: { type: 'string' } }, 'parameters.type'],
    [
      'parameters do not compile',
      { parameters: { type: 'object', properties: { a: { type: 'nope' } } } },
      'parameters.properties.a.type',
    ],
    [
      'a backreference pattern (RE2 has none)',
      { parameters: { type: 'object', properties: { a: { type: 'string', pattern: '(a)\\1' } } } },
      'parameters.properties.a.pattern',
    ],
    [
      'a lookahead in patternProperties',
      { parameters: { type: 'object', patternProperties: { '^(?!x)': {} } } },
      'parameters.patternProperties["^(?!x)"]',
    ],
    ['missing http', { http: undefined }, 'http'],
    ['bad url', { http: { url: 'ftp://x', method: 'POST' } }, 'http.url'],
    ['credentials in the url', { http: { url: 'http://u:p@x/' } }, 'http.url'],
    ['bad method', { http: { url: 'http://x', method: 'TRACE' } }, 'http.method'],
    ['header not a string', { http: { url: 'http://x', headers: { A: 1 } } }, 'http.headers.A'],
    [
      'a line break in a header value',
      { http: { url: 'http://x', headers: { A: 'a\r\nB: c' } } },
      'http.headers.A',
    ],
    [
      'a header named constructor',
      { http: { url: 'http://x', headers: { Constructor: 'v' } } },
      'http.headers.Constructor',
    ],
    [
      'a header named __proto__ (an own key, as JSON.parse makes it)',
      { http: { url: 'http://x', headers: JSON.parse('{"__proto__": "v"}') } },
      'http.headers.__proto__',
    ],
    ['bad timeout', { http: { url: 'http://x', timeout_ms: 0 } }, 'http.timeout_ms'],
    [
      'a description past limits.max_tool_description_chars',
      { description: 'x'.repeat(LIMITS.max_tool_description_chars + 1) },
      'description',
    ],
    [
      'parameters past limits.max_tool_parameters_bytes',
      {
        parameters: {
          type: 'object',
          description: 'x'.repeat(LIMITS.max_tool_parameters_bytes),
        },
      },
      'parameters',
    ],
    [
      'headers past limits.max_tool_headers',
      {
        http: {
          url: 'http://x',
          headers: Object.fromEntries(
            Array.from({ length: LIMITS.max_tool_headers + 1 }, (_, i) => [`H${i}`, 'v']),
          ),
        },
      },
      'http.headers',
    ],
    [
      'a header value past limits.max_tool_header_value_chars',
      {
        http: {
          url: 'http://x',
          headers: { A: 'x'.repeat(LIMITS.max_tool_header_value_chars + 1) },
        },
      },
      'http.headers.A',
    ],
  ];
  it.each(bad)('%s → problem at %s', (_n, change, path) => {
    const { tool, problems } = validateToolDeclaration({ ...good, ...change }, LIMITS);
    expect(tool).toBeNull();
    expect(problems.map((p) => p.path)).toContain(path);
  });

  it('prefixes paths with the base path', () => {
    expect(
      validateToolDeclaration({ ...good, safety: 1 }, LIMITS, 'tools[2]').problems[0].path,
    ).toBe('tools[2].safety');
  });
});

describe('headers', () => {
  it('resolves placeholders only from the given secrets', () => {
    expect(resolveHeaders({ A: 'Bearer ${T}', B: 'plain' }, { T: 'x1' })).toEqual({
      headers: { A: 'Bearer x1', B: 'plain' },
    });
    expect(resolveHeaders({ A: '${NOPE}' }, {})).toEqual({ missing: 'NOPE', header: 'A' });
    // a name Object's prototype has is not a secret: missing, not `function Object() …`
    for (const name of ['constructor', '__proto__', 'toString'])
      expect(resolveHeaders({ A: `\${${name}}` }, {})).toEqual({ missing: name, header: 'A' });
  });
});
