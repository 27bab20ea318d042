import {
  ListedMcpTool,
  mcpToolDefinitions,
  mcpToolReturn,
  mcpToolSafety,
  truncateUtf8,
} from '../../../../src/core/mcp/mcp-tools';
import { redactor } from '../../../../src/core/secrets/redactor';

const asListed = (text: string) => text;
const KEY = redactor([{ label: 'KEY', value: 'key-0451aa' }]);

describe('mcpToolSafety', () => {
  // annotations, override → safety
  const rows: [ListedMcpTool['annotations'], string | undefined, string][] = [
    [undefined, undefined, 'side_effecting'],
    [{ readOnlyHint: true }, undefined, 'read_only'],
    [{ destructiveHint: true }, undefined, 'privileged'],
    [{ readOnlyHint: true, destructiveHint: true }, undefined, 'privileged'],
    [{ readOnlyHint: 'yes' }, undefined, 'side_effecting'],
    [{ destructiveHint: true }, 'read_only', 'read_only'],
  ];
  it.each(rows)('%j with override %s → %s', (annotations, override, expected) => {
    expect(mcpToolSafety({ name: 't', annotations }, override as never)).toBe(expected);
  });
});

describe('mcpToolDefinitions', () => {
  const limits = { maxToolsPerServer: 2, maxSchemaBytes: 200, maxDescriptionChars: 5 };
  const compile = (s: Record<string, unknown>) => (s.properties === 7 ? 'bad properties' : null);
  const server = { server_id: 'mcp_server-1', server_name: 's' };

  it('maps tools, skips what cannot be offered and says why', () => {
    const { tools, skipped } = mcpToolDefinitions(
      [
        {
          name: 'ok',
          description: 'a long description',
          inputSchema: { $schema: 'x', type: 'object' },
        },
        { name: 'bad.name' },
        { name: 'ok' },
        { name: 'arr', inputSchema: { type: 'array' } },
        { name: 'huge', inputSchema: { type: 'object', description: 'x'.repeat(300) } },
        { name: 'broken', inputSchema: { type: 'object', properties: 7 } },
        { name: 'noschema' },
        { name: 'third' },
      ],
      server,
      {},
      limits,
      compile,
      asListed,
    );
    expect(tools).toEqual([
      {
        name: 'ok',
        description: 'a lon',
        parameters: { type: 'object' },
        safety: 'side_effecting',
        kind: 'mcp',
        mcp: { ...server, tool: 'ok' },
      },
      expect.objectContaining({ name: 'noschema', parameters: { type: 'object', properties: {} } }),
    ]);
    expect(skipped.map((s) => s.name)).toEqual([
      'bad.name',
      'ok',
      'arr',
      'huge',
      'broken',
      'third',
    ]);
    expect(skipped[5].reason).toContain('max_tools_per_server');
  });

  it('a listing that echoes a secret value of the connection: redacted; a name holding one is skipped', () => {
    const { tools, skipped } = mcpToolDefinitions(
      [
        {
          name: 'leaky',
          description: 'uses key-0451aa',
          inputSchema: { type: 'object', properties: { k: { default: 'key-0451aa' } } },
        },
        { name: 'key-0451aa' },
      ],
      server,
      {},
      { ...limits, maxDescriptionChars: 100 },
      compile,
      KEY,
    );
    expect(tools).toEqual([
      expect.objectContaining({
        description: 'uses [redacted:KEY]',
        parameters: { type: 'object', properties: { k: { default: '[redacted:KEY]' } } },
      }),
    ]);
    expect(skipped).toEqual([{ name: '[redacted:KEY]', reason: expect.stringContaining('name') }]);
  });
});

describe('mcpToolReturn', () => {
  // result → tool return
  const rows: [string, object, { status: string; value: string }][] = [
    [
      'text parts',
      {
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      },
      { status: 'success', value: 'a\nb' },
    ],
    [
      'structured only',
      { content: [], structuredContent: { n: 1 } },
      { status: 'success', value: '{"n":1}' },
    ],
    [
      'text wins over structured',
      { content: [{ type: 'text', text: 't' }], structuredContent: { n: 1 } },
      { status: 'success', value: 't' },
    ],
    [
      'an image is named',
      { content: [{ type: 'image', mimeType: 'image/png', data: 'AAAA' }] },
      { status: 'success', value: '[image image/png omitted]' },
    ],
    [
      'isError',
      { content: [{ type: 'text', text: 'no' }], isError: true },
      { status: 'error', value: 'no' },
    ],
    [
      'embedded resource text',
      { content: [{ type: 'resource', resource: { uri: 'x', text: 'r' } }] },
      { status: 'success', value: 'r' },
    ],
  ];
  it.each(rows)('%s', (_n, result, expected) =>
    expect(mcpToolReturn(result, 1000, asListed)).toEqual(expected),
  );

  it('redacts the connection’s secret values before the cut, which could leave part of one', () => {
    const text = `${'a'.repeat(30)}key-0451aa${'b'.repeat(40)}`;
    const cut = mcpToolReturn({ content: [{ type: 'text', text }] }, 80, KEY).value;
    expect(cut).toBe(`${'a'.repeat(30)}[redacte\n[truncated: the result was over 80 bytes]`);
    expect(cut).not.toContain('key-');
  });

  it('bounds the text in bytes, on a character boundary, with a note', () => {
    const out = truncateUtf8('é'.repeat(100), 60);
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(60);
    expect(out).toMatch(/^é+\n\[truncated: the result was over 60 bytes\]$/);
    expect(truncateUtf8('short', 60)).toBe('short');
  });
});
