/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startApp, TestApp } from '../../support/app-harness';
import { api, say } from '../../support/processing-fixtures';

/**
 * Header values are write-only secret material: a `${NAME}` reference is shown as written (it is a name),
 * literal text beside it is not (QA: tenant round: `Bearer sk-… ${NAME}` was answered as written, for the
 * operator's tool files to every tenant). Clients that send a tool back as they read it keep its values.
 */
describe('security: header values are write-only', () => {
  const A = { authorization: 'Bearer key-a' };
  const OP_LITERAL = 'sk-op-mixed-8c2e5a17';
  const OP_MCP_LITERAL = 'sk-op-mcp-mixed-1d7f30b9';
  const TENANT_LITERAL = 'sk-tenant-literal-6e4b2c90';
  let t: TestApp;
  let dir: string;
  let server: Server;
  let url: string;
  const seen: IncomingMessage['headers'][] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      req.resume();
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    dir = mkdtempSync(path.join(tmpdir(), 'write-only-'));
    mkdirSync(path.join(dir, 'tools'));
    mkdirSync(path.join(dir, 'mcp'));
    writeFileSync(
      path.join(dir, 'tools', 'operator.yaml'),
      [
        'tools:',
        '  - name: operator_mixed',
        '    description: The operator’s tool.',
        '    safety: read_only',
        '    kind: http',
        `    http: { url: "${url}/op", headers: { X-Api-Key: "${OP_LITERAL}:\${SHARED}" } }`,
      ].join('\n'),
    );
    writeFileSync(
      path.join(dir, 'mcp', 'operator.yaml'),
      [
        'server_name: operator-mcp',
        'config:',
        '  mcp_server_type: streamable_http',
        `  server_url: ${url}/mcp`,
        '  auth_header: Authorization',
        `  auth_token: "Bearer ${OP_MCP_LITERAL} \${SHARED}"`,
      ].join('\n'),
    );
    t = await startApp({
      env: { TOOLS_DIR: path.join(dir, 'tools'), MCP_DIR: path.join(dir, 'mcp'), SHARED: 'shared' },
      overrides: {
        auth: { api_keys: [{ key: 'key-a', tenant: 'tenant-a' }] },
        tools: { http: { env_allowlist: ['SHARED'] } },
      },
    });
    expect((await api(t, 'PUT', '/v1/secrets/KEY', { value: 'key-value-1' }, A)).status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => (seen.length = 0));

  const declaration = (name: string) => ({
    name,
    description: 'a tenant tool',
    safety: 'read_only',
    kind: 'http',
    parameters: { type: 'object', properties: {} },
    http: {
      url: `${url}/${name}`,
      method: 'POST',
      headers: {
        Authorization: 'Bearer ${KEY}',
        'X-Mixed': `${TENANT_LITERAL} \${KEY}`,
        'X-Literal': TENANT_LITERAL,
      },
    },
  });

  async function runOnce(tool: string): Promise<IncomingMessage['headers']> {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name: `w-${Math.random().toString(36).slice(2)}`,
        tools: [tool],
        include_base_tools: false,
        model_script: [{ tool_calls: [{ name: tool, arguments: {} }] }, { content: 'done' }],
      },
      A,
    );
    await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, say('go'), A);
    expect(seen).toHaveLength(1);
    return seen.pop()!;
  }

  it('the operator’s tool and MCP server mixing a literal key with ${NAME}: every tenant sees only the reference', async () => {
    const tools = await api(t, 'GET', '/v1/tools/', undefined, A);
    const tool = tools.body.find((x: any) => x.name === 'operator_mixed');
    expect(tool.http.headers).toEqual({ 'X-Api-Key': '[redacted]${SHARED}' });
    const one = await api(t, 'GET', `/v1/tools/${tool.id}`, undefined, A);
    const servers = await api(t, 'GET', '/v1/mcp-servers/', undefined, A);
    expect(servers.body[0].auth_token).toBe('[redacted]${SHARED}');
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'uses-operator', tools: ['operator_mixed'], include_base_tools: false },
      A,
    );
    const exported = await api(t, 'GET', `/v1/agents/${agent.body.id}/export`, undefined, A);
    expect(exported.body.tools[0].http.headers).toEqual({});
    expect(exported.body.metadata.dropped_headers).toBe('operator_mixed.X-Api-Key');
    const everything = JSON.stringify([tools, one, servers, agent, exported]);
    expect(everything).not.toContain(OP_LITERAL);
    expect(everything).not.toContain(OP_MCP_LITERAL);
    // the call still sends it
    expect((await runOnce('operator_mixed'))['x-api-key']).toBe(`${OP_LITERAL}:shared`);
  });

  it('a tenant’s own literal text beside ${KEY} is write-only too: create, read, list, the agent, its export', async () => {
    const created = await api(t, 'POST', '/v1/tools/', declaration('mixed_tool'), A);
    expect(created.status).toBe(200);
    expect(created.body.http.headers).toEqual({
      Authorization: 'Bearer ${KEY}',
      'X-Mixed': '[redacted]${KEY}',
      'X-Literal': '[redacted]',
    });
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'uses-mixed', tools: ['mixed_tool'], include_base_tools: false },
      A,
    );
    const id = agent.body.id;
    const exported = await api(t, 'GET', `/v1/agents/${id}/export`, undefined, A);
    expect(exported.body.tools[0].http.headers).toEqual({ Authorization: 'Bearer ${KEY}' });
    const everything = JSON.stringify([
      created,
      agent,
      await api(t, 'GET', `/v1/tools/${created.body.id}`, undefined, A),
      await api(t, 'GET', '/v1/tools/', undefined, A),
      await api(t, 'GET', `/v1/agents/${id}`, undefined, A),
      await api(t, 'GET', `/v1/agents/${id}/tools`, undefined, A),
      exported,
    ]);
    expect(everything).not.toContain(TENANT_LITERAL);
  });

  it('a client that sends the tool back as it read it (PUT, PATCH) keeps the values it could not read', async () => {
    const created = await api(t, 'POST', '/v1/tools/', declaration('round_trip'), A);
    const read = (await api(t, 'GET', `/v1/tools/${created.body.id}`, undefined, A)).body;
    const put = await api(t, 'PUT', '/v1/tools/', { ...read, description: 'v2' }, A);
    expect(put).toMatchObject({ status: 200, body: { description: 'v2' } });
    const patched = await api(t, 'PATCH', `/v1/tools/${read.id}`, { http: read.http }, A);
    expect(patched.status).toBe(200);
    expect(await runOnce('round_trip')).toMatchObject({
      authorization: 'Bearer key-value-1',
      'x-mixed': `${TENANT_LITERAL} key-value-1`,
      'x-literal': TENANT_LITERAL,
    });
    // a value that differs from what was shown replaces it
    const changed = await api(
      t,
      'PATCH',
      `/v1/tools/${read.id}`,
      { http: { headers: { ...read.http.headers, 'X-Literal': 'new-literal' } } },
      A,
    );
    expect(changed.status).toBe(200);
    expect((await runOnce('round_trip'))['x-literal']).toBe('new-literal');
  });

  it('a tenant’s MCP server with literal text beside ${KEY} (a header, the auth token, an env value) → 400', async () => {
    const remote = { mcp_server_type: 'streamable_http', server_url: `${url}/mcp` };
    for (const config of [
      { ...remote, custom_headers: { 'X-Key': `${TENANT_LITERAL} \${KEY}` } },
      { ...remote, auth_header: 'Authorization', auth_token: `Bearer ${TENANT_LITERAL} \${KEY}` },
      { mcp_server_type: 'stdio', command: 'node', env: { TOKEN: `${TENANT_LITERAL}\${KEY}` } },
    ]) {
      const res = await api(t, 'POST', '/v1/mcp-servers/', { server_name: 'mixed', config }, A);
      expect(res).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
      expect(JSON.stringify(res.body)).not.toContain(TENANT_LITERAL);
    }
    const ok = await api(
      t,
      'POST',
      '/v1/mcp-servers/',
      {
        server_name: 'references',
        config: {
          mcp_server_type: 'streamable_http',
          server_url: `${url}/mcp`,
          auth_header: 'Authorization',
          auth_token: 'Bearer ${KEY}',
        },
      },
      A,
    );
    expect(ok).toMatchObject({ status: 200, body: { auth_token: 'Bearer ${KEY}' } });
  });
});
