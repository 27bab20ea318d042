import { secretNames, validateMcpServer } from '../../../../src/core/mcp/mcp-server-spec';

const limits = { maxArgs: 3, maxEntries: 2, maxStringChars: 100 };
const api = { source: 'api' as const, allowedCommands: ['/usr/bin/mcp-allowed'] };
const file = { source: 'file' as const, allowedCommands: [] };
const http = (config: Record<string, unknown>) => ({
  server_name: 'srv',
  config: { mcp_server_type: 'streamable_http', server_url: 'https://mcp.example/mcp', ...config },
});
const stdio = (config: Record<string, unknown>) => ({
  server_name: 'srv',
  config: { mcp_server_type: 'stdio', command: '/usr/bin/mcp-allowed', args: [], ...config },
});

describe('validateMcpServer', () => {
  // given a body and who declares it → the problem paths (empty = valid), or a stdio refusal
  const rows: [string, unknown, typeof api | typeof file, string[] | 'refused'][] = [
    ['http with a secret header', http({ custom_headers: { 'X-Key': '${KEY}' } }), api, []],
    [
      'http auth token from a secret',
      http({ auth_header: 'Authorization', auth_token: 'Bearer ${T}' }),
      api,
      [],
    ],
    [
      'tenant literal header',
      http({ custom_headers: { 'X-Key': 'sk-1' } }),
      api,
      ['config.custom_headers.X-Key'],
    ],
    ['operator literal header', http({ custom_headers: { 'X-Key': 'sk-1' } }), file, []],
    [
      'auth header without token',
      http({ auth_header: 'Authorization' }),
      api,
      ['config.auth_token'],
    ],
    [
      'URL with credentials',
      http({ server_url: 'https://u:p@mcp.example/' }),
      api,
      ['config.server_url'],
    ],
    ['not http(s)', http({ server_url: 'file:///etc/passwd' }), api, ['config.server_url']],
    [
      'sse',
      { server_name: 'srv', config: { mcp_server_type: 'sse', server_url: 'https://x' } },
      api,
      ['config.mcp_server_type'],
    ],
    ['bad name', { ...http({}), server_name: 'a b' }, api, ['server_name']],
    ['unknown field', { ...http({}), extra: 1 }, api, ['extra']],
    [
      'too many headers',
      http({ custom_headers: { a: '${A}', b: '${B}', c: '${C}' } }),
      api,
      ['config.custom_headers'],
    ],
    ['allowed command', stdio({ env: { TOKEN: '${TOKEN}' } }), api, []],
    ['command not allowed', stdio({ command: '/bin/sh' }), api, 'refused'],
    ['any command from a file', stdio({ command: '/bin/sh' }), file, []],
    ['reserved env', stdio({ env: { NODE_OPTIONS: '${X}' } }), api, ['config.env.NODE_OPTIONS']],
    ['LD_PRELOAD', stdio({ env: { LD_PRELOAD: '${X}' } }), api, ['config.env.LD_PRELOAD']],
    ...[
      'JAVA_TOOL_OPTIONS',
      'DOTNET_STARTUP_HOOKS',
      'NODE_EXTRA_CA_CERTS',
      'https_proxy',
      'PERLLIB',
    ].map((name): (typeof rows)[number] => [
      `runtime env ${name}`,
      stdio({ env: { [name]: '${X}' } }),
      api,
      [`config.env.${name}`],
    ]),
    ['an ordinary name', stdio({ env: { GITHUB_TOKEN: '${X}' } }), api, []],
    ['runtime env from a file', stdio({ env: { JAVA_TOOL_OPTIONS: '-Xmx1g' } }), file, []],
    ['tenant literal env', stdio({ env: { TOKEN: 'abc' } }), api, ['config.env.TOKEN']],
    ['too many args', stdio({ args: ['a', 'b', 'c', 'd'] }), api, ['config.args']],
    [
      'bad safety override',
      { ...http({}), tool_safety: { x: 'harmless' } },
      api,
      ['tool_safety.x'],
    ],
  ];
  it.each(rows)('%s', (_name, body, who, expected) => {
    const r = validateMcpServer(body, limits, who);
    if (expected === 'refused') {
      expect(r.spec).toBeNull();
      expect(r.stdioRefused).toContain('mcp.stdio.allowed_commands');
      return;
    }
    expect(r.problems.map((p) => p.path)).toEqual(expected);
    expect(r.spec === null).toBe(expected.length > 0);
  });

  it('an update merges over the current config and cannot change the transport', () => {
    const current = validateMcpServer(
      http({ custom_headers: { 'X-Key': '${K}' } }),
      limits,
      api,
    ).spec!;
    const moved = validateMcpServer(
      { config: { server_url: 'https://other/mcp' } },
      limits,
      api,
      current,
    );
    expect(moved.spec).toMatchObject({
      server_name: 'srv',
      config: { server_url: 'https://other/mcp', custom_headers: { 'X-Key': '${K}' } },
    });
    const changed = validateMcpServer(
      { config: { mcp_server_type: 'stdio' } },
      limits,
      api,
      current,
    );
    expect(changed.problems.map((p) => p.path)).toEqual(['config.mcp_server_type']);
  });

  it('secretNames lists each ${NAME} once', () => {
    const spec = validateMcpServer(
      http({ auth_header: 'A', auth_token: '${T}', custom_headers: { B: '${T}-${U}' } }),
      limits,
      api,
    ).spec!;
    expect(secretNames(spec.config).sort()).toEqual(['T', 'U']);
  });
});
