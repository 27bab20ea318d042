/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies and messages are free-form JSON that tests inspect */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as ts from 'typescript';
import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { startHttpMcpServer } from '../support/mcp-test-server';
import { api, WsClient } from './consent-helpers';

/**
 * MCP servers as tool sources, end to end: a stdio server declared by the operator (config/mcp) and a
 * streamable HTTP server declared by a tenant, both real SDK servers (test/support/mcp-test-server.ts);
 * the fake model calls their tools under rules and consent.
 */
const KEY_A = 'sk-mcp-a';
const KEY_B = 'sk-mcp-b';

describe('MCP servers as tool sources', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let http: Awaited<ReturnType<typeof startHttpMcpServer>>;
  let dir: string;
  let httpServerId: string;
  let stdioServerId: string;

  const a = (method: string, p: string, body?: unknown) => api(t, method, p, body, KEY_A);

  beforeAll(async () => {
    fake = await startFakeModelServer();
    http = await startHttpMcpServer();
    dir = mkdtempSync(path.join(tmpdir(), 'mcp-e2e-'));
    // The stdio server runs as plain JS (transpiled once here), so each (re)start is a bare `node`.
    const source = readFileSync(path.join(__dirname, '../support/mcp-test-server.ts'), 'utf8');
    const js = ts.transpileModule(source, {
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 },
    }).outputText;
    writeFileSync(path.join(dir, 'mcp-test-server.js'), js);
    mkdirSync(path.join(dir, 'mcp'));
    writeFileSync(
      path.join(dir, 'mcp', 'local.yaml'),
      [
        'server_name: local',
        'config:',
        '  mcp_server_type: stdio',
        `  command: ${JSON.stringify(process.execPath)}`,
        `  args: [${JSON.stringify(path.join(dir, 'mcp-test-server.js'))}]`,
        '  env:',
        `    NODE_PATH: ${JSON.stringify(path.resolve(__dirname, '../../node_modules'))}`,
        '    TOOL_PREFIX: local_',
        'tool_safety:',
        '  local_pid: read_only',
      ].join('\n'),
    );
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      env: { MCP_DIR: path.join(dir, 'mcp') },
      overrides: {
        auth: {
          api_keys: [
            { key: KEY_A, tenant: 'tenant-a' },
            { key: KEY_B, tenant: 'tenant-b' },
          ],
        },
      },
    });
    const servers = await a('GET', '/v1/mcp-servers/');
    stdioServerId = servers.body.find((s: any) => s.server_name === 'local').id;
    const created = await a('POST', '/v1/mcp-servers/', {
      server_name: 'remote',
      config: { mcp_server_type: 'streamable_http', server_url: http.url },
    });
    expect(created.status).toBe(200);
    httpServerId = created.body.id;
  });
  afterAll(async () => {
    await t?.close();
    await fake.close();
    await http.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => fake.reset());

  async function anAgent(tools: string[], rules: any[] = [], timeoutSeconds = 30): Promise<string> {
    const res = await a('POST', '/v1/agents/', {
      name: `mcp-${Math.random().toString(36).slice(2)}`,
      system: 'You use MCP tools.',
      tools,
      tool_rules: rules,
      tool_executor: { tool_timeout_seconds: timeoutSeconds },
      llm_config: {
        model: 'fake',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  }

  const say = async (agentId: string, content: string) =>
    (await a('POST', `/v1/agents/${agentId}/messages`, { messages: [{ role: 'user', content }] }))
      .body;
  const returns = (res: any) =>
    res.messages.filter((m: any) => m.message_type === 'tool_return_message');

  it('lists both servers in Letta’s shape and their tools with safety classes from annotations', async () => {
    const list = await a('GET', '/v1/mcp-servers/');
    expect(list.body.map((s: any) => [s.server_name, s.mcp_server_type, s.source])).toEqual([
      ['local', 'stdio', 'file'],
      ['remote', 'streamable_http', 'api'],
    ]);
    const tools = (await a('GET', `/v1/mcp-servers/${httpServerId}/tools`)).body;
    const safety = Object.fromEntries(tools.map((x: any) => [x.name, x.safety]));
    expect(safety).toMatchObject({
      echo: 'read_only',
      delete_everything: 'privileged',
      add: 'side_effecting',
    });
    expect(safety['bad.name']).toBeUndefined(); // not a function name: skipped, and refresh says why
    expect(tools.find((x: any) => x.name === 'echo')).toMatchObject({
      tool_type: 'external_mcp',
      tags: ['mcp:remote'],
      kind: 'mcp',
      source: 'mcp',
      json_schema: { parameters: { properties: { text: { type: 'string' } } } },
    });
    // The operator's tool_safety override wins over the (missing) annotation.
    const local = (await a('GET', `/v1/mcp-servers/${stdioServerId}/tools`)).body;
    expect(local.find((x: any) => x.name === 'local_pid').safety).toBe('read_only');
    expect(local.find((x: any) => x.name === 'local_add').safety).toBe('side_effecting');
    const refresh = await a('PATCH', `/v1/mcp-servers/${httpServerId}/refresh`);
    expect(refresh).toMatchObject({ status: 200, body: { added: [], deleted: [] } });
    expect(refresh.body.skipped).toEqual([expect.objectContaining({ name: 'bad.name' })]);
    // A second server listing the same names: its tools are skipped, never replacing the first one's.
    const twin = await a('POST', '/v1/mcp-servers/', {
      server_name: 'twin',
      config: { mcp_server_type: 'streamable_http', server_url: http.url },
    });
    const twinRefresh = await a('PATCH', `/v1/mcp-servers/${twin.body.id}/refresh`);
    expect(twinRefresh.body.added).toEqual([]);
    expect(twinRefresh.body.skipped).toContainEqual({
      name: 'echo',
      reason: 'another tool of this tenant has the name',
    });
    expect((await a('DELETE', `/v1/mcp-servers/${twin.body.id}`)).status).toBe(204);
    // The tools are the tenant's tools, attachable by name or id.
    const all = (await a('GET', '/v1/tools/')).body.map((x: any) => x.name);
    expect(all).toEqual(expect.arrayContaining(['echo', 'add', 'delete_everything', 'local_pid']));
  });

  it('Letta’s own SDK manages servers: create, list, retrieve, tools, refresh, update, delete; attach a tool by id', async () => {
    const client = new Letta({ baseURL: t.baseUrl, apiKey: KEY_A, maxRetries: 0 });
    const created: any = await client.mcpServers.create({
      server_name: 'via-sdk',
      config: { mcp_server_type: 'streamable_http', server_url: http.url },
    });
    expect(created).toMatchObject({ server_name: 'via-sdk', mcp_server_type: 'streamable_http' });
    expect((await client.mcpServers.list()).map((s: any) => s.server_name)).toContain('via-sdk');
    expect(await client.mcpServers.retrieve(created.id)).toMatchObject({ server_url: http.url });
    // every name is taken by `remote` already: listed as skipped, none added
    expect(await client.mcpServers.tools.list(created.id)).toEqual([]);
    const sync: any = await client.mcpServers.refresh(created.id);
    expect(sync).toMatchObject({ added: [], updated: [], deleted: [] });
    const renamed: any = await client.mcpServers.update(created.id, {
      server_name: 'via-sdk-2',
      config: { mcp_server_type: 'streamable_http', server_url: http.url },
    });
    expect(renamed.server_name).toBe('via-sdk-2');
    // as Letta's update, null keeps a config field (its SDK types server_url as required, null allowed)
    await client.mcpServers.update(created.id, {
      config: {
        mcp_server_type: 'streamable_http',
        server_url: http.url,
        custom_headers: { 'X-Team': '${TEAM}' },
      },
    });
    const kept: any = await client.mcpServers.update(created.id, {
      server_name: null,
      config: { server_url: null, custom_headers: null, auth_header: null, auth_token: null },
    });
    expect(kept).toMatchObject({
      server_name: 'via-sdk-2',
      server_url: http.url,
      custom_headers: { 'X-Team': '${TEAM}' },
    });
    await client.mcpServers.delete(created.id);
    await expect(client.mcpServers.retrieve(created.id)).rejects.toMatchObject({ status: 404 });

    const echo: any = (await client.mcpServers.tools.list(httpServerId)).find(
      (x: any) => x.name === 'echo',
    );
    expect(
      await client.mcpServers.tools.retrieve(echo.id, { mcp_server_id: httpServerId }),
    ).toMatchObject({
      name: 'echo',
      tool_type: 'external_mcp',
    });
    const agentId = await anAgent([]);
    const attached: any = await client.agents.tools.attach(echo.id, { agent_id: agentId });
    expect(attached.tools.map((x: any) => x.name)).toContain('echo');
  });

  it('an agent calls tools of both servers; results map to tool returns; tool_call_id reaches the server', async () => {
    const agentId = await anAgent(['echo', 'add', 'fail', 'local_echo']);
    fake.push(
      {
        tool_calls: [
          { name: 'echo', arguments: { text: 'hello' }, id: 'call_echo_1' },
          { name: 'add', arguments: { a: 2, b: 3 }, id: 'call_add_1' },
          { name: 'fail', arguments: {}, id: 'call_fail_1' },
          { name: 'local_echo', arguments: { text: 'over stdio' }, id: 'call_echo_2' },
        ],
      },
      { content: 'done' },
    );
    const res = await say(agentId, 'go');
    const [echo, add, fail, localEcho] = returns(res);
    expect(JSON.parse(echo.tool_return)).toEqual({
      echo: 'hello',
      meta: { tool_call_id: 'call_echo_1', agent_id: agentId, run_id: expect.any(String) },
    });
    expect(JSON.parse(localEcho.tool_return)).toMatchObject({
      echo: 'over stdio',
      meta: { tool_call_id: 'call_echo_2' },
    });
    expect(add).toMatchObject({ status: 'success', tool_return: '{"sum":5}' });
    expect(fail).toMatchObject({ status: 'error' });
    expect(fail.tool_return).toContain('it broke');
    expect(http.state.calls.map((c) => c.meta)).toContainEqual(
      expect.objectContaining({ tool_call_id: 'call_add_1' }),
    );
  });

  it('max_count_per_step and cooldown govern MCP tools as any other', async () => {
    const agentId = await anAgent(
      ['add', 'big'],
      [
        { type: 'max_count_per_step', tool_name: 'add', max_count_limit: 1 },
        { type: 'cooldown', tool_name: 'big', seconds: 600 },
      ],
    );
    const before = http.state.calls.length;
    fake.push(
      {
        tool_calls: [
          { name: 'add', arguments: { a: 1, b: 1 }, id: 'call_max_1' },
          { name: 'add', arguments: { a: 1, b: 2 }, id: 'call_max_2' },
          { name: 'big', arguments: { bytes: 5 }, id: 'call_cool_1' },
        ],
      },
      { tool_calls: [{ name: 'big', arguments: { bytes: 6 }, id: 'call_cool_2' }] },
      { content: 'done' },
    );
    const res = await say(agentId, 'go');
    const r = returns(res);
    expect(r.map((m: any) => m.status)).toEqual(['success', 'error', 'success', 'error']);
    expect(r[1].tool_return).toContain('add reached its limit of 1 call');
    expect(r[3].tool_return).toContain('[ToolRuleViolation] big');
    expect(http.state.calls.slice(before).map((c) => c.name)).toEqual(['add', 'big']);
  });

  it('a destructive tool is privileged; requires_consent parks it, a WebSocket approval runs it once', async () => {
    const agentId = await anAgent(
      ['delete_everything'],
      [{ type: 'requires_consent', tool_name: 'delete_everything' }],
    );
    const ws = await WsClient.connect(t.baseUrl, { key: KEY_A });
    try {
      await ws.subscribe([agentId]);
      fake.push(
        { tool_calls: [{ name: 'delete_everything', arguments: {}, id: 'call_del_1' }] },
        { content: 'done' },
      );
      const res = await say(agentId, 'wipe it');
      expect(res.stop_reason.stop_reason).toBe('requires_approval');
      const count = () => http.state.calls.filter((c) => c.name === 'delete_everything').length;
      expect(count()).toBe(0);
      const req = (await ws.next((f) => f.type === 'consent.request')).request;
      const from = ws.frames.length;
      ws.send({ type: 'consent.decision', request_id: req.id, decision: 'approve_once' });
      await ws.next((f) => f.type === 'run.event' && f.event === 'run.completed', from, 10_000);
      expect(count()).toBe(1);
      expect(http.state.calls.find((c) => c.name === 'delete_everything')!.meta).toMatchObject({
        tool_call_id: 'call_del_1',
      });
    } finally {
      await ws.close();
    }
  });

  it('read_only MCP calls run in parallel', async () => {
    const agentId = await anAgent(['slow_read']);
    http.state.maxOverlap = 0;
    fake.push(
      {
        tool_calls: [
          { name: 'slow_read', arguments: { key: 'a' }, id: 'call_par_1' },
          { name: 'slow_read', arguments: { key: 'b' }, id: 'call_par_2' },
        ],
      },
      { content: 'done' },
    );
    const res = await say(agentId, 'read two');
    expect(returns(res).map((m: any) => m.tool_return)).toEqual(['read a', 'read b']);
    expect(http.state.maxOverlap).toBe(2);
  });

  it('a server killed mid-call gives an error tool return; the next call restarts it', async () => {
    const agentId = await anAgent(['local_pid', 'local_die']);
    fake.push(
      {
        tool_calls: [
          { name: 'local_pid', arguments: {}, id: 'call_pid_1' },
          { name: 'local_die', arguments: {}, id: 'call_die_1' },
          { name: 'local_pid', arguments: {}, id: 'call_pid_2' },
        ],
      },
      { content: 'done' },
    );
    const r = returns(await say(agentId, 'die'));
    expect(r.map((m: any) => m.status)).toEqual(['success', 'error', 'success']);
    expect(r[1].tool_return).toContain('"local"');
    expect(r[1].tool_return).toContain('closed the connection');
    expect(Number(r[2].tool_return)).not.toBe(Number(r[0].tool_return)); // a new process
  });

  it('an HTTP server that drops the connection mid-call: an error tool return at once, the next call reconnects', async () => {
    const agentId = await anAgent(['drop', 'echo']);
    fake.push(
      {
        tool_calls: [
          { name: 'drop', arguments: {}, id: 'call_drop_1' },
          { name: 'echo', arguments: { text: 'again' }, id: 'call_drop_2' },
        ],
      },
      { content: 'done' },
    );
    const r = returns(await say(agentId, 'drop'));
    expect(r.map((m: any) => m.status)).toEqual(['error', 'success']);
    expect(r[0].tool_return).toContain(
      '"remote" failed the call: the server closed the connection before answering',
    );
    expect(JSON.parse(r[1].tool_return).echo).toBe('again');
  });

  it('a hung call obeys the tool timeout and is cancelled over the protocol', async () => {
    const agentId = await anAgent(['hang'], [], 1);
    const cancelledBefore = http.state.cancelled;
    fake.push(
      { tool_calls: [{ name: 'hang', arguments: {}, id: 'call_hang_1' }] },
      { content: 'ok' },
    );
    const r = returns(await say(agentId, 'hang'));
    expect(r[0].status).toBe('error');
    expect(r[0].tool_return).toContain('Timeout');
    await waitFor(() => http.state.cancelled > cancelledBefore);
  });

  it('tools/list_changed is picked up', async () => {
    const agentId = await anAgent(['add_tool']);
    fake.push(
      { tool_calls: [{ name: 'add_tool', arguments: {}, id: 'call_add_tool' }] },
      { content: 'ok' },
    );
    await say(agentId, 'add a tool');
    await waitFor(async () =>
      (await a('GET', `/v1/mcp-servers/${httpServerId}/tools`)).body.some(
        (x: any) => x.name === 'late_tool',
      ),
    );
  });

  it('a server that is down is an error tool return, not a stuck run; refresh says 502', async () => {
    // remote moves to a port where nothing listens: its tools stay, their calls fail plainly
    const moved = await a('PATCH', `/v1/mcp-servers/${httpServerId}`, {
      config: { server_url: 'http://127.0.0.1:9/mcp' },
    });
    expect(moved).toMatchObject({ status: 200, body: { server_url: 'http://127.0.0.1:9/mcp' } });
    const agentId = await anAgent(['echo']);
    fake.push(
      { tool_calls: [{ name: 'echo', arguments: { text: 'x' }, id: 'call_down' }] },
      { content: 'ok' },
    );
    const r = returns(await say(agentId, 'echo'));
    expect(r[0].status).toBe('error');
    expect(r[0].tool_return).toMatch(
      /^\[McpServerUnavailable\] MCP server "remote" is not available/,
    );
    const back = await a('PATCH', `/v1/mcp-servers/${httpServerId}`, {
      config: { mcp_server_type: 'streamable_http', server_url: http.url },
    });
    expect(back.status).toBe(200);

    const down = await a('POST', '/v1/mcp-servers/', {
      server_name: 'down',
      config: { mcp_server_type: 'streamable_http', server_url: 'http://127.0.0.1:9/mcp' },
    });
    expect(down.status).toBe(200);
    const refresh = await a('PATCH', `/v1/mcp-servers/${down.body.id}/refresh`);
    expect(refresh).toMatchObject({ status: 502, body: { code: 'MCP_SERVER_UNAVAILABLE' } });
    expect((await a('DELETE', `/v1/mcp-servers/${down.body.id}`)).status).toBe(204);
  });
  // The hostile-tenant rows are in test/e2e/security/mcp.e2e-spec.ts.
});

async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
