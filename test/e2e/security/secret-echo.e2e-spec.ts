/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startApp, TestApp } from '../../support/app-harness';
import { startHttpMcpServer, stdioServerScript } from '../../support/mcp-test-server';
import { api, say } from '../../support/processing-fixtures';

/**
 * A tool answers with the credentials it was sent: an echo service (httpbin's /headers), an error page
 * that repeats the Authorization header, a link or a Basic credential built from it. The tenant sees a
 * tool's answer (its history, the run's stream, a direct run), so every secret value the call used is
 * replaced by `[redacted:NAME]` before anything stores or returns it (QA: tenant round).
 */
describe('security: a tool that echoes the secrets it was sent', () => {
  const A = { authorization: 'Bearer key-a' };
  // the operator's key that tenant A may use (secrets.config) but must not read
  const OPERATOR_KEY = 'op-key-7f3a9c21e5b84d06';
  const TENANT_KEY = 'tenant-a-key-4b1d8e6f20';
  const ALLOWED = 'allow-listed-3e9a1c7b5d';
  const LITERAL = 'sk-literal-operator-9d2c41a7';
  const BASIC = Buffer.from('svc-user:basic-pass-1c8e4f').toString('base64');
  const MCP_LITERAL = 'sk-mcp-literal-5a0e7d13';
  const MCP_ARG = 'sk-mcp-arg-2f6b9e40';
  // literal keys under names that do not say "key"
  const PARTNER = 'partner-literal-6e2b90d4c1';
  const WORKSPACE = 'ws-tenant-literal-3a7f05';
  const ALL = [
    PARTNER,
    WORKSPACE,
    OPERATOR_KEY,
    TENANT_KEY,
    ALLOWED,
    LITERAL,
    BASIC,
    'basic-pass-1c8e4f',
    MCP_LITERAL,
    MCP_ARG,
  ];
  let t: TestApp;
  let echo: Server;
  let mcpHttp: Awaited<ReturnType<typeof startHttpMcpServer>>;
  let url: string;
  let dir: string;
  /** The headers each request to the echo service carried (the secrets did go out). */
  const seen: IncomingMessage['headers'][] = [];

  beforeAll(async () => {
    echo = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      const auth = String(req.headers.authorization ?? '');
      const key = String(req.headers['x-api-key'] ?? '');
      const route = new URL(req.url!, 'http://x').pathname;
      const answers: Record<string, () => void> = {
        // httpbin's /headers
        '/headers': () => res.end(JSON.stringify({ headers: req.headers })),
        // an error page that repeats the header, HTML-escaped
        '/denied': () =>
          res
            .writeHead(401, { 'content-type': 'text/html' })
            .end(`<p>Invalid credentials &quot;${auth.replace(/"/g, '&quot;')}&quot;</p>`),
        // a link that carries the key, URL-encoded
        '/link': () =>
          res.end(`continue at https://svc.example/next?auth=${encodeURIComponent(auth)}`),
        // a Basic credential the service builds from the key, and the one it was sent, decoded
        '/basic': () =>
          res.end(
            JSON.stringify({
              upstream: `Basic ${Buffer.from(`u:${key}`).toString('base64')}`,
              decoded: Buffer.from(auth.replace(/^Basic /, ''), 'base64').toString(),
            }),
          ),
      };
      (answers[route] ?? (() => res.writeHead(404).end()))();
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
    dir = mkdtempSync(path.join(tmpdir(), 'secret-echo-'));
    mkdirSync(path.join(dir, 'tools'));
    // the operator's tool: its URL and its literal key are the operator's
    writeFileSync(
      path.join(dir, 'tools', 'operator.yaml'),
      [
        'tools:',
        '  - name: operator_headers',
        '    description: Calls the operator’s service.',
        '    safety: read_only',
        '    kind: http',
        `    http: { url: "${url}/headers", method: POST, headers: { X-Api-Key: ${LITERAL} } }`,
        '  - name: operator_partner',
        '    description: Calls the partner’s service.',
        '    safety: read_only',
        '    kind: http',
        `    http: { url: "${url}/headers", method: POST, headers: { X-Partner: ${PARTNER} } }`,
        // a value the tenant may set (its own secret of that name wins) beside the literal key
        '  - name: operator_traced',
        '    description: Calls the operator’s service with a trace tag.',
        '    safety: read_only',
        '    kind: http',
        `    http: { url: "${url}/headers", method: POST, headers: { X-Api-Key: ${LITERAL}, X-Trace: "\${ALLOWED}" } }`,
      ].join('\n'),
    );
    // the operator's stdio MCP server, which every tenant may use: a key from the environment, a
    // literal one, and one on its command line
    mkdirSync(path.join(dir, 'mcp'));
    writeFileSync(
      path.join(dir, 'mcp', 'operator.yaml'),
      [
        'server_name: operator-mcp',
        'config:',
        '  mcp_server_type: stdio',
        `  command: ${JSON.stringify(process.execPath)}`,
        `  args: [${JSON.stringify(stdioServerScript())}, --api-key, ${MCP_ARG}]`,
        '  env:',
        '    TOOL_PREFIX: op_',
        '    SERVICE_TOKEN: ${ALLOWED}',
        `    API_KEY: ${MCP_LITERAL}`,
        '    TOOL_NOTE: "Signs with ${ALLOWED}"',
      ].join('\n'),
    );
    mcpHttp = await startHttpMcpServer();
    t = await startApp({
      env: {
        TOOLS_DIR: path.join(dir, 'tools'),
        MCP_DIR: path.join(dir, 'mcp'),
        OPERATOR_KEY_ENV: OPERATOR_KEY,
        ALLOWED,
      },
      overrides: {
        auth: { api_keys: [{ key: 'key-a', tenant: 'tenant-a' }] },
        tools: { http: { env_allowlist: ['ALLOWED'] } },
        secrets: {
          config: [{ tenant: 'tenant-a', name: 'OPERATOR_KEY', value_env: 'OPERATOR_KEY_ENV' }],
        },
      },
    });
    expect((await api(t, 'PUT', '/v1/secrets/TENANT_KEY', { value: TENANT_KEY }, A)).status).toBe(
      200,
    );
    expect((await api(t, 'PUT', '/v1/secrets/BASIC', { value: BASIC }, A)).status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await mcpHttp.close();
    echo.closeAllConnections();
    await new Promise((r) => echo.close(r));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => (seen.length = 0));

  /** Tenant A's http tool at the echo service's `route`. */
  async function aTool(name: string, route: string, headers: Record<string, string>) {
    const res = await api(
      t,
      'POST',
      '/v1/tools/',
      {
        name,
        description: 'calls the echo service',
        safety: 'read_only',
        kind: 'http',
        parameters: { type: 'object', properties: {} },
        http: { url: `${url}${route}`, method: 'POST', headers },
      },
      A,
    );
    expect(res.status).toBe(200);
  }

  /** Tenant A's agent whose scripted model calls `tool` once per message, then answers. */
  async function agentCalling(
    tool: string,
    args: Record<string, unknown>,
    secrets: Record<string, string> = {},
  ): Promise<string> {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name: `echo-${Math.random().toString(36).slice(2)}`,
        secrets,
        tools: [tool],
        include_base_tools: false,
        model_script: [{ tool_calls: [{ name: tool, arguments: args }] }, { content: 'done' }],
      },
      A,
    );
    expect(agent.status).toBe(200);
    return agent.body.id as string;
  }

  /**
   * Calls `tool` every way a tenant can (a run, its stream, a direct run) and gathers what the tenant
   * is answered: the replies, the agent's history and the run's messages.
   */
  async function everythingTheTenantSees(tool: string): Promise<string> {
    const id = await agentCalling(tool, {});
    const reply = await api(t, 'POST', `/v1/agents/${id}/messages`, say('go'), A);
    expect(reply.status).toBe(200);
    const stream = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('again', { streaming: true }),
      A,
    );
    expect(stream.body).toContain('tool_return_message');
    const run = await api(t, 'POST', `/v1/agents/${id}/tools/${tool}/run`, { args: {} }, A);
    const history = await api(t, 'GET', `/v1/agents/${id}/messages?limit=100`, undefined, A);
    const runId = reply.body.messages[0].run_id;
    const runMessages = await api(t, 'GET', `/v1/runs/${runId}/messages`, undefined, A);
    expect(seen).toHaveLength(3); // the calls went out
    return JSON.stringify([reply.body, stream.body, run.body, history.body, runMessages.body]);
  }

  const leaked = (text: string) => ALL.filter((v) => text.includes(v));

  it('httpbin-style /headers answering every header: each secret value is [redacted:NAME]', async () => {
    await aTool('headers_echo', '/headers', {
      Authorization: 'Bearer ${OPERATOR_KEY}',
      'X-Tenant-Key': '${TENANT_KEY}',
      'X-Shared': '${ALLOWED}',
    });
    const text = await everythingTheTenantSees('headers_echo');
    expect(seen[0]).toMatchObject({
      authorization: `Bearer ${OPERATOR_KEY}`,
      'x-tenant-key': TENANT_KEY,
      'x-shared': ALLOWED,
    });
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('Bearer [redacted:OPERATOR_KEY]');
    expect(text).toContain('[redacted:TENANT_KEY]');
    expect(text).toContain('[redacted:ALLOWED]');
  });

  it('an error page repeating the Authorization header (HTML-escaped): the error return is scrubbed', async () => {
    await aTool('denied_echo', '/denied', { Authorization: 'Token "${OPERATOR_KEY}"' });
    const text = await everythingTheTenantSees('denied_echo');
    expect(seen[0].authorization).toBe(`Token "${OPERATOR_KEY}"`);
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('HTTP 401');
    expect(text).toContain('[redacted:OPERATOR_KEY]');
  });

  it('a link carrying the key URL-encoded: scrubbed in that form too', async () => {
    await aTool('link_echo', '/link', { Authorization: 'Bearer ${OPERATOR_KEY} ${TENANT_KEY}' });
    const text = await everythingTheTenantSees('link_echo');
    expect(leaked(text)).toEqual([]);
    expect(text).not.toContain(encodeURIComponent(`Bearer ${OPERATOR_KEY}`));
    expect(text).toContain('auth=Bearer%20[redacted:OPERATOR_KEY]%20[redacted:TENANT_KEY]');
  });

  it('a Basic credential the service builds from the key, and the one sent, decoded: neither shows', async () => {
    await aTool('basic_echo', '/basic', {
      Authorization: 'Basic ${BASIC}',
      'X-Api-Key': '${OPERATOR_KEY}',
    });
    const text = await everythingTheTenantSees('basic_echo');
    expect(leaked(text)).toEqual([]);
    const built = Buffer.from(`u:${OPERATOR_KEY}`).toString('base64');
    // the key's bytes in the middle of a base64 text, at any alignment
    expect(text).not.toContain(built.slice(4, -4));
    expect(text).toContain('[redacted:BASIC]');
  });

  it('the operator’s tool with a literal key at its own (echoing) URL: the key is not shown to a tenant', async () => {
    const text = await everythingTheTenantSees('operator_headers');
    expect(seen[0]['x-api-key']).toBe(LITERAL);
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('[redacted:X-Api-Key]');
    const listed = await api(t, 'GET', '/v1/tools/', undefined, A);
    expect(JSON.stringify(listed.body)).not.toContain(LITERAL);
  });

  it('the operator’s tool with a literal key under a name that does not say so (X-Partner): scrubbed too', async () => {
    const text = await everythingTheTenantSees('operator_partner');
    expect(seen[0]['x-partner']).toBe(PARTNER);
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('[redacted:X-Partner]');
  });

  it('a tenant’s tool with a literal value under an ordinary name: hidden on read, and scrubbed from its answers', async () => {
    await aTool('workspace_echo', '/headers', { 'X-Workspace': WORKSPACE });
    const text = await everythingTheTenantSees('workspace_echo');
    expect(seen[0]['x-workspace']).toBe(WORKSPACE);
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('[redacted:X-Workspace]');
  });

  it.each(['"x-api-key":"sk-l', '"x-api-key":"sk-X'])(
    'a tenant sets the secret the operator’s tool also sends to %s… (probing its literal key by what scrubbing leaves): whichever the guess, the key is replaced whole',
    async (guess) => {
      const id = await agentCalling('operator_traced', {}, { ALLOWED: guess });
      const reply = await api(t, 'POST', `/v1/agents/${id}/messages`, say('go'), A);
      expect(seen[0]).toMatchObject({ 'x-api-key': LITERAL, 'x-trace': guess });
      const answer = reply.body.messages.find((m: any) => m.message_type === 'tool_return_message')
        .tool_return as string;
      expect(answer).toContain('"x-api-key":"[redacted:X-Api-Key]"');
      expect(answer).not.toContain(LITERAL.slice(4, 12));
      expect(answer).toContain('"x-trace":"[redacted:ALLOWED]"');
    },
  );

  /** Calls an MCP tool as tenant A (the scripted model asks for it once); the whole reply as text. */
  async function callMcp(tool: string, args: Record<string, unknown>): Promise<string> {
    const id = await agentCalling(tool, args);
    const reply = await api(t, 'POST', `/v1/agents/${id}/messages`, say('go'), A);
    const history = await api(t, 'GET', `/v1/agents/${id}/messages?limit=100`, undefined, A);
    const returns = reply.body.messages.filter(
      (m: any) => m.message_type === 'tool_return_message',
    );
    expect(returns).toHaveLength(1);
    return JSON.stringify([reply.body, history.body]);
  }

  it.each([
    ['a value from the operator’s environment', 'SERVICE_TOKEN', 'text', '[redacted:ALLOWED]'],
    ['a literal key of the operator’s file', 'API_KEY', 'text', '[redacted:API_KEY]'],
    ['in an error result', 'API_KEY', 'error', '[redacted:API_KEY]'],
    ['in a thrown error', 'SERVICE_TOKEN', 'throw', '[redacted:ALLOWED]'],
  ])(
    'the operator’s stdio MCP server echoes its env to a tenant (%s): scrubbed',
    async (_what, name, as, marker) => {
      const text = await callMcp('op_env', { name, as });
      expect(leaked(text)).toEqual([]);
      expect(text).toContain(marker);
    },
  );

  it('…its command line: the flag’s value is scrubbed, and hidden where the server is shown', async () => {
    const text = await callMcp('op_argv', {});
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('--api-key [redacted:api-key]');
    const servers = await api(t, 'GET', '/v1/mcp-servers/', undefined, A);
    expect(servers.body[0].args.slice(1)).toEqual(['--api-key', '[redacted]']);
    expect(JSON.stringify(servers.body)).not.toMatch(/sk-mcp|allow-listed/);
  });

  it('…a tool description it lists with the value in it: scrubbed before any tenant sees it', async () => {
    const tools = await api(t, 'GET', '/v1/tools/', undefined, A);
    const note = tools.body.find((x: any) => x.name === 'op_note');
    expect(note.description).toBe('Signs with [redacted:ALLOWED]');
    expect(leaked(JSON.stringify(tools.body))).toEqual([]);
  });

  it('a tenant’s HTTP MCP server echoing the request headers: its own secret is scrubbed too', async () => {
    const created = await api(
      t,
      'POST',
      '/v1/mcp-servers/',
      {
        server_name: 'echoing',
        config: {
          mcp_server_type: 'streamable_http',
          server_url: mcpHttp.url,
          auth_header: 'Authorization',
          auth_token: 'Bearer ${TENANT_KEY}',
          custom_headers: { 'X-Operator': '${OPERATOR_KEY}' },
        },
      },
      A,
    );
    expect(created.status).toBe(200);
    const text = await callMcp('headers', {});
    expect(mcpHttp.headers.some((h) => h['x-operator'] === OPERATOR_KEY)).toBe(true);
    expect(leaked(text)).toEqual([]);
    expect(text).toContain('Bearer [redacted:TENANT_KEY]');
    expect(text).toContain('[redacted:OPERATOR_KEY]');
  });

  it('an MCP server whose tools/list error repeats the Authorization header: the refresh error is scrubbed', async () => {
    const hostile = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        const msg = JSON.parse(raw || '{}') as { id?: unknown; method?: string; params?: any };
        if (msg.id === undefined) return void res.writeHead(202).end();
        const answer =
          msg.method === 'initialize'
            ? {
                result: {
                  protocolVersion: msg.params.protocolVersion,
                  capabilities: { tools: {} },
                  serverInfo: { name: 'h', version: '1' },
                },
              }
            : { error: { code: -32001, message: `refused ${req.headers.authorization}` } };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...answer }));
      });
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    try {
      const port = (hostile.address() as AddressInfo).port;
      const created = await api(
        t,
        'POST',
        '/v1/mcp-servers/',
        {
          server_name: 'refusing',
          config: {
            mcp_server_type: 'streamable_http',
            server_url: `http://127.0.0.1:${port}/mcp`,
            auth_header: 'Authorization',
            auth_token: 'Bearer ${TENANT_KEY}',
          },
        },
        A,
      );
      expect(created.status).toBe(200);
      const refresh = await api(t, 'PATCH', `/v1/mcp-servers/${created.body.id}/refresh`, {}, A);
      expect(refresh).toMatchObject({ status: 502, body: { code: 'MCP_SERVER_UNAVAILABLE' } });
      expect(refresh.body.message).toContain('refused Bearer [redacted:TENANT_KEY]');
      expect(leaked(JSON.stringify(refresh.body))).toEqual([]);
    } finally {
      hostile.closeAllConnections();
      await new Promise((r) => hostile.close(r));
    }
  });
});
