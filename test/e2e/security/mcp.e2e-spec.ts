/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { existsSync } from 'node:fs';
import { createServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startApp, TestApp } from '../../support/app-harness';
import { startHttpMcpServer, stdioServerScript } from '../../support/mcp-test-server';
import { api } from '../consent-helpers';

/**
 * Issue 13: a tenant declaring MCP servers. Stdio runs a command on the operator's machine, so only the
 * operator's allow-list lets a tenant do it; values are the tenant's own secrets, never the operator's
 * environment; another tenant's servers do not exist for it.
 */
describe('security: MCP servers declared by tenants', () => {
  let t: TestApp;
  let http: Awaited<ReturnType<typeof startHttpMcpServer>>;
  let script: string;
  const a = (method: string, p: string, body?: unknown) => api(t, method, p, body, 'sk-a');
  const b = (method: string, p: string, body?: unknown) => api(t, method, p, body, 'sk-b');
  const remote = (name: string, config: Record<string, unknown> = {}) => ({
    server_name: name,
    config: { mcp_server_type: 'streamable_http', server_url: http.url, ...config },
  });

  beforeAll(async () => {
    http = await startHttpMcpServer();
    script = stdioServerScript();
    t = await startApp({
      env: { OPERATOR_TOKEN: 'operator-secret-value' },
      overrides: {
        auth: {
          api_keys: [
            { key: 'sk-a', tenant: 'team-a' },
            { key: 'sk-b', tenant: 'team-b' },
          ],
        },
        quotas: { mcp_servers: 2 },
        mcp: {
          max_message_bytes: 65536,
          max_result_bytes: 2048,
          stdio: { allowed_commands: [process.execPath] },
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await http.close();
  });

  it('tenant B declares a stdio server with a command not allowed → 403, nothing runs', async () => {
    const res = await b('POST', '/v1/mcp-servers/', {
      server_name: 'evil',
      config: {
        mcp_server_type: 'stdio',
        command: '/bin/sh',
        args: ['-c', 'touch /tmp/mcp-pwned-b'],
      },
    });
    expect(res).toMatchObject({ status: 403, body: { code: 'MCP_STDIO_NOT_ALLOWED' } });
    expect(existsSync('/tmp/mcp-pwned-b')).toBe(false);
    expect((await b('GET', '/v1/mcp-servers/')).body).toEqual([]);
  });

  it('an allow-listed command runs for the tenant, but NODE_OPTIONS / LD_PRELOAD / literal values are 400', async () => {
    const ok = await b('POST', '/v1/mcp-servers/', {
      server_name: 'allowed',
      config: { mcp_server_type: 'stdio', command: process.execPath, args: [script] },
    });
    expect(ok.status).toBe(200);
    const tools = await b('GET', `/v1/mcp-servers/${ok.body.id}/tools`);
    expect(tools.body.map((x: any) => x.name)).toEqual(expect.arrayContaining(['echo', 'pid']));
    for (const env of [{ NODE_OPTIONS: '${X}' }, { LD_PRELOAD: '${X}' }, { TOKEN: 'literal' }]) {
      const res = await b('POST', '/v1/mcp-servers/', {
        server_name: 'preload',
        config: { mcp_server_type: 'stdio', command: process.execPath, args: [script], env },
      });
      expect(res).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    }
    expect((await b('DELETE', `/v1/mcp-servers/${ok.body.id}`)).status).toBe(204);
  });

  // QA: only the shell's and a few interpreters' names were reserved; a command that is no interpreter
  // still runs on a runtime or a C library that takes options, code or a proxy from its environment
  it.each([
    ['a JVM runs a command of the tenant’s', 'JAVA_TOOL_OPTIONS', '-XX:OnOutOfMemoryError=${CMD}'],
    ['a JVM, likewise', '_JAVA_OPTIONS', '${OPTS}'],
    ['.NET loads an assembly first', 'DOTNET_STARTUP_HOOKS', '${DLL}'],
    ['Lua runs it as code', 'LUA_INIT', '${CODE}'],
    ['Node writes files where it says', 'NODE_V8_COVERAGE', '${DIR}'],
    ['glibc loads charset modules from it', 'GCONV_PATH', '${DIR}'],
    ['glibc tunables', 'GLIBC_TUNABLES', '${T}'],
    ['Perl’s library path', 'PERLLIB', '${DIR}'],
    ['the command’s traffic goes through the tenant', 'HTTPS_PROXY', 'http://${HOST}'],
    ['likewise in lower case', 'all_proxy', 'http://${HOST}'],
    ['the certificates it trusts', 'SSL_CERT_FILE', '${FILE}'],
  ])(
    'tenant B sets an env an allow-listed command’s runtime obeys (%s: %s) → 400, nothing runs',
    async (_why, name, value) => {
      const res = await b('POST', '/v1/mcp-servers/', {
        server_name: 'runtime-env',
        config: {
          mcp_server_type: 'stdio',
          command: process.execPath,
          args: [script],
          env: { [name]: value },
        },
      });
      expect(res).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
      expect(res.body.details.problems).toEqual([
        { path: `config.env.${name}`, message: expect.stringContaining('may not be set') },
      ]);
    },
  );

  it('tenant B puts a literal token in a header → 400; ${OPERATOR_TOKEN} never resolves from the operator environment', async () => {
    const literal = await b(
      'POST',
      '/v1/mcp-servers/',
      remote('leak', { custom_headers: { 'X-Key': 'sk-literal' } }),
    );
    expect(literal).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    const ref = await b(
      'POST',
      '/v1/mcp-servers/',
      remote('secretive', { auth_header: 'Authorization', auth_token: 'Bearer ${OPERATOR_TOKEN}' }),
    );
    expect(ref.status).toBe(200);
    expect(ref.body.auth_token).toBe('Bearer ${OPERATOR_TOKEN}');
    const refresh = await b('PATCH', `/v1/mcp-servers/${ref.body.id}/refresh`);
    expect(refresh).toMatchObject({ status: 400, body: { code: 'MCP_SECRET_MISSING' } });
    expect(JSON.stringify(http.headers)).not.toContain('operator-secret-value');
    expect((await b('DELETE', `/v1/mcp-servers/${ref.body.id}`)).status).toBe(204);
  });

  it('a tenant’s ${NAME} resolves from its own secrets: a header for HTTP, the env of an allow-listed stdio command', async () => {
    expect((await a('PUT', '/v1/secrets/MCP_TOKEN', { value: 'a-mcp-token-1' })).status).toBe(200);
    const withSecret = { auth_header: 'Authorization', auth_token: 'Bearer ${MCP_TOKEN}' };
    const mine = await a('POST', '/v1/mcp-servers/', remote('a-secret', withSecret));
    expect(mine.status).toBe(200);
    expect(http.headers.some((h) => h.authorization === 'Bearer a-mcp-token-1')).toBe(true);
    expect(mine.body.auth_token).toBe('Bearer ${MCP_TOKEN}'); // shown as declared, never resolved
    // B names the same secret: it has none, A's is not B's
    const theirs = await b('POST', '/v1/mcp-servers/', remote('b-secret', withSecret));
    const refresh = await b('PATCH', `/v1/mcp-servers/${theirs.body.id}/refresh`);
    expect(refresh).toMatchObject({ status: 400, body: { code: 'MCP_SECRET_MISSING' } });
    expect((await b('DELETE', `/v1/mcp-servers/${theirs.body.id}`)).status).toBe(204);
    expect((await a('DELETE', `/v1/mcp-servers/${mine.body.id}`)).status).toBe(204);

    expect((await b('PUT', '/v1/secrets/PFX', { value: 'b_' })).status).toBe(200);
    const stdio = await b('POST', '/v1/mcp-servers/', {
      server_name: 'prefixed',
      config: {
        mcp_server_type: 'stdio',
        command: process.execPath,
        args: [script],
        env: { TOOL_PREFIX: '${PFX}' },
      },
    });
    const tools = await b('GET', `/v1/mcp-servers/${stdio.body.id}/tools`);
    expect(tools.body.map((x: any) => x.name)).toContain('b_echo');
    expect((await b('DELETE', `/v1/mcp-servers/${stdio.body.id}`)).status).toBe(204);
  });

  it('a tenant’s MCP server URL on a denied address (cloud metadata) is never connected to', async () => {
    const meta = await b('POST', '/v1/mcp-servers/', {
      server_name: 'metadata',
      config: { mcp_server_type: 'streamable_http', server_url: 'http://169.254.169.254/mcp' },
    });
    expect(meta.status).toBe(200);
    const refresh = await b('PATCH', `/v1/mcp-servers/${meta.body.id}/refresh`);
    expect(refresh).toMatchObject({ status: 502, body: { code: 'MCP_SERVER_UNAVAILABLE' } });
    expect(refresh.body.message).toContain('denied by the outbound host policy');
    expect((await b('DELETE', `/v1/mcp-servers/${meta.body.id}`)).status).toBe(204);
  });

  it('tenant B cannot see, change, refresh, delete or use tenant A’s server', async () => {
    const mine = await a('POST', '/v1/mcp-servers/', remote('a-remote'));
    expect(mine.status).toBe(200);
    const id = mine.body.id;
    expect((await b('GET', `/v1/mcp-servers/${id}`)).status).toBe(404);
    expect((await b('GET', `/v1/mcp-servers/${id}/tools`)).status).toBe(404);
    expect((await b('PATCH', `/v1/mcp-servers/${id}`, { server_name: 'x' })).status).toBe(404);
    expect((await b('PATCH', `/v1/mcp-servers/${id}/refresh`)).status).toBe(404);
    expect((await b('DELETE', `/v1/mcp-servers/${id}`)).status).toBe(404);
    expect((await b('GET', '/v1/tools/')).body.map((x: any) => x.name)).not.toContain('add');
    expect((await a('GET', '/v1/tools/')).body.map((x: any) => x.name)).toContain('add');
    // B may use the same server name: names are per tenant
    const same = await b('POST', '/v1/mcp-servers/', remote('a-remote'));
    expect(same.status).toBe(200);
    expect((await b('DELETE', `/v1/mcp-servers/${same.body.id}`)).status).toBe(204);
  });

  it('a server answering past mcp.max_message_bytes is an error return; a long result is cut at max_result_bytes', async () => {
    const server = await a('POST', '/v1/mcp-servers/', remote('a-big'));
    expect(server.status).toBe(200);
    const agent = await a('POST', '/v1/agents/', {
      name: 'big-reader',
      tools: ['big'],
      model_script: [
        {
          tool_calls: [
            { name: 'big', arguments: { bytes: 100_000 } },
            { name: 'big', arguments: { bytes: 10_000 } },
          ],
        },
        { content: 'done' },
      ],
    });
    const res = await a('POST', `/v1/agents/${agent.body.id}/messages`, {
      messages: [{ role: 'user', content: 'read big' }],
    });
    const [huge, long] = res.body.messages.filter(
      (m: any) => m.message_type === 'tool_return_message',
    );
    expect(huge.status).toBe('error');
    expect(huge.tool_return).toContain('mcp.max_message_bytes');
    expect(long.status).toBe('success');
    expect(Buffer.byteLength(long.tool_return)).toBeLessThanOrEqual(2048);
    expect(long.tool_return).toMatch(/\[truncated: the result was over 2048 bytes\]$/);
    expect((await a('DELETE', `/v1/mcp-servers/${server.body.id}`)).status).toBe(204);
  });

  // QA: over stdio only the SDK's own 10 MiB buffer applied, whatever mcp.max_message_bytes said
  it('a stdio server writing a message past mcp.max_message_bytes: an error return naming the bound; its next call works', async () => {
    expect((await a('PUT', '/v1/secrets/STDIO_PREFIX', { value: 's_' })).status).toBe(200);
    const server = await a('POST', '/v1/mcp-servers/', {
      server_name: 'a-big-stdio',
      config: {
        mcp_server_type: 'stdio',
        command: process.execPath,
        args: [script],
        env: { TOOL_PREFIX: '${STDIO_PREFIX}' },
      },
    });
    expect(server.status).toBe(200);
    const agent = await a('POST', '/v1/agents/', {
      name: 'big-stdio-reader',
      tools: ['s_big', 's_pid'],
      model_script: [
        {
          tool_calls: [
            { name: 's_big', arguments: { bytes: 200_000 } },
            { name: 's_pid', arguments: {} },
          ],
        },
        { content: 'done' },
      ],
    });
    const res = await a('POST', `/v1/agents/${agent.body.id}/messages`, {
      messages: [{ role: 'user', content: 'read big' }],
    });
    const [huge, pid] = res.body.messages.filter(
      (m: any) => m.message_type === 'tool_return_message',
    );
    expect(huge).toMatchObject({ status: 'error', tool_return: expect.stringContaining('65536') });
    expect(huge.tool_return).toContain('mcp.max_message_bytes');
    // that connection (and its process) was dropped, nothing else: the next call starts it again
    expect(pid.status).toBe('success');
    expect(Number(pid.tool_return)).toBeGreaterThan(0);
    expect((await a('DELETE', `/v1/mcp-servers/${server.body.id}`)).status).toBe(204);
  });

  /**
   * A hostile streamable HTTP MCP server of tenant B: it completes the handshake, and `list` writes its
   * tools/list answer (an event stream: `event(message)` frames one JSON-RPC message, `result` is the
   * answer's). `answers` counts the JSON-RPC responses it was sent. Declared as B's server `name`.
   */
  async function hostileServer(
    name: string,
    list: (res: ServerResponse, event: (m: unknown) => string, result: unknown) => void,
  ) {
    const seen = { answers: 0 };
    const server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c: Buffer) => (raw += c.toString()));
      req.on('end', () => {
        if (req.method !== 'POST') return void res.writeHead(405).end();
        const msg = JSON.parse(raw) as { id?: unknown; method?: string; params?: any };
        if (msg.method === undefined) seen.answers++;
        if (msg.method === undefined || msg.id === undefined) return void res.writeHead(202).end();
        const reply = (result: unknown) => ({ jsonrpc: '2.0', id: msg.id, result });
        if (msg.method === 'initialize') {
          res.writeHead(200, { 'content-type': 'application/json' });
          const info = { name: 'hostile', version: '1' };
          const caps = { tools: { listChanged: true } };
          const v = msg.params.protocolVersion;
          return void res.end(
            JSON.stringify(reply({ protocolVersion: v, capabilities: caps, serverInfo: info })),
          );
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const event = (m: unknown) => `event: message\ndata: ${JSON.stringify(m)}\n\n`;
        list(
          res,
          event,
          reply({ tools: [{ name: `${name}_tool`, inputSchema: { type: 'object' } }] }),
        );
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const created = await b('POST', '/v1/mcp-servers/', {
      server_name: name,
      config: { mcp_server_type: 'streamable_http', server_url: `http://127.0.0.1:${port}/mcp` },
    });
    expect(created.status).toBe(200);
    return {
      seen,
      /** Refreshes of one server run one after another: this one ends after those asked for before it. */
      refresh: () => b('PATCH', `/v1/mcp-servers/${created.body.id}/refresh`),
      close: async () => {
        expect((await b('DELETE', `/v1/mcp-servers/${created.body.id}`)).status).toBe(204);
        server.closeAllConnections();
        await new Promise((r) => server.close(r));
      },
    };
  }

  // QA: every list_changed queued one more refresh, and each refresh's tools/list could carry more of them:
  // one response of 60,000 notifications (within mcp.max_message_bytes) queued 60,000 refreshes, each
  // listing again (and getting 60,000 more) — the server's time and memory for one tenant's server
  it('tenant B’s server floods notifications/tools/list_changed: the refreshes they ask for are one, not one each', async () => {
    let lists = 0;
    const changed = { jsonrpc: '2.0', method: 'notifications/tools/list_changed' };
    const hostile = await hostileServer('flooder', (res, event, result) => {
      // the first answer comes after a flood of list_changed
      if (++lists === 1) res.write(event(changed).repeat(50));
      res.end(event(result));
    });
    try {
      expect((await hostile.refresh()).status).toBe(200);
      expect({ lists: lists <= 3 ? 'at most 3' : lists }).toEqual({ lists: 'at most 3' });
    } finally {
      await hostile.close();
    }
  });

  // QA: the SDK answers every request a server sends (ping; anything else "method not found"), and over
  // streamable HTTP each answer is a POST of ours: 50 pings in one answer were 50 POSTs, whose answers may
  // carry 50 more pings each
  it('tenant B’s server sends requests in bulk (pings): a few are answered, not one POST each', async () => {
    const hostile = await hostileServer('pinger', (res, event, result) => {
      for (let i = 0; i < 50; i++)
        res.write(event({ jsonrpc: '2.0', id: `ping-${i}`, method: 'ping' }));
      res.end(event(result));
    });
    try {
      // a later request on the same connection: the answers the flood drew were sent before it
      expect((await hostile.refresh()).status).toBe(200);
      const { answers } = hostile.seen;
      expect({ answers: answers <= 10 ? 'at most 10' : answers }).toEqual({
        answers: 'at most 10',
      });
    } finally {
      await hostile.close();
    }
  });

  it('past quotas.mcp_servers → 409 QUOTA_EXCEEDED; a taken name → 409 MCP_SERVER_EXISTS', async () => {
    expect((await a('POST', '/v1/mcp-servers/', remote('a-remote'))).body.code).toBe(
      'MCP_SERVER_EXISTS',
    );
    expect((await a('POST', '/v1/mcp-servers/', remote('a-second'))).status).toBe(200);
    const third = await a('POST', '/v1/mcp-servers/', remote('a-third'));
    expect(third).toMatchObject({
      status: 409,
      body: { code: 'QUOTA_EXCEEDED', details: { quota: 'mcp_servers', limit: 2 } },
    });
  });
});
