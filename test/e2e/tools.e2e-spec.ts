import { Logger } from '@nestjs/common';
import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ToolInvoker } from '../../src/core/executor/contracts';
import { TOOL_INVOKER } from '../../src/rules/tokens';
import { builtinToolId } from '../../src/tools/builtin-tools';
import { ToolsService } from '../../src/tools/tools.service';
import { startApp, TestApp } from '../support/app-harness';

type Json = Record<string, unknown>;

/** Tool declarations from files and the API; http tools called with secrets resolved only on the wire. */
describe('tools', () => {
  let t: TestApp;
  let dir: string;
  let server: Server;
  let serverUrl: string;
  const received: { headers: IncomingHttpHeaders; body: string }[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"refunded":true}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    dir = mkdtempSync(path.join(tmpdir(), 'tools-e2e-'));
    mkdirSync(path.join(dir, 'tools'));
    writeFileSync(
      path.join(dir, 'tools', 'refunds.yaml'),
      [
        'name: issue_refund',
        'description: Refunds an order',
        'safety: side_effecting',
        'kind: http',
        'parameters: { type: object, properties: { order_id: { type: string } }, required: [order_id] }',
        'http:',
        `  url: ${serverUrl}/refund`,
        '  method: POST',
        '  headers: { Authorization: "Bearer ${REFUNDS_TOKEN}" }',
      ].join('\n'),
    );
    t = await startApp({
      dir,
      env: { REFUNDS_TOKEN: 'tok-very-secret-123' },
      overrides: { tools: { http: { env_allowlist: ['REFUNDS_TOKEN'] } } },
    });
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const call = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(t.baseUrl + p, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, text, json: JSON.parse(text) as Json & Json[] };
  };

  const httpTool = (name: string) => ({
    name,
    description: 'Looks things up',
    safety: 'read_only',
    kind: 'http',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    http: { url: `${serverUrl}/lookup`, method: 'POST', timeout_ms: 2000 },
  });

  it('lists built-ins (stable ids) and file tools, never a resolved secret', async () => {
    const { status, json, text } = await call('GET', '/v1/tools/');
    expect(status).toBe(200);
    const names = json.map((x: Json) => x.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'send_message',
        'core_memory_append',
        'core_memory_replace',
        'conversation_search',
        'issue_refund',
      ]),
    );
    const send = json.find((x: Json) => x.name === 'send_message');
    expect(send).toMatchObject({
      id: builtinToolId('send_message'),
      kind: 'builtin',
      safety: 'read_only',
    });
    const refund = json.find((x: Json) => x.name === 'issue_refund')!;
    expect(refund).toMatchObject({
      kind: 'http',
      safety: 'side_effecting',
      source: 'file',
      json_schema: { name: 'issue_refund', parameters: { required: ['order_id'] } },
      http: { headers: { Authorization: 'Bearer ${REFUNDS_TOKEN}' } },
    });
    expect(text).not.toContain('tok-very-secret-123');
    expect((await call('GET', `/v1/tools/${refund.id as string}`)).json.name).toBe('issue_refund');
  });

  it('creates, reads and deletes an API tool; refuses duplicates and read-only deletes', async () => {
    const created = await call('POST', '/v1/tools/', httpTool('lookup'));
    expect(created.status).toBe(200);
    expect(created.json).toMatchObject({
      id: expect.stringMatching(/^tool-/),
      name: 'lookup',
      source: 'api',
    });
    expect((await call('POST', '/v1/tools/', httpTool('lookup'))).json.code).toBe('TOOL_EXISTS');
    expect((await call('POST', '/v1/tools/', httpTool('issue_refund'))).status).toBe(409);
    expect((await call('POST', '/v1/tools/', httpTool('send_message'))).status).toBe(409);

    const agent = await call('POST', '/v1/agents/', { name: 'uses-lookup', tools: ['lookup'] });
    expect(agent.status).toBe(200);
    const agentTools = await call('GET', `/v1/agents/${agent.json.id as string}/tools`);
    expect(agentTools.json.map((x: Json) => x.name)).toContain('lookup');

    const id = created.json.id as string;
    expect((await call('DELETE', `/v1/tools/${id}`)).status).toBe(200);
    expect((await call('GET', `/v1/tools/${id}`)).status).toBe(404);
    expect((await call('DELETE', `/v1/tools/${builtinToolId('send_message')}`)).status).toBe(409);
    const fileTool = (await call('GET', '/v1/tools/')).json.find(
      (x: Json) => x.name === 'issue_refund',
    )!;
    expect((await call('DELETE', `/v1/tools/${fileTool.id as string}`)).json.code).toBe(
      'TOOL_READ_ONLY',
    );
  });

  it('hides literal header values, keeps placeholders', async () => {
    const res = await call('POST', '/v1/tools/', {
      ...httpTool('with_headers'),
      http: {
        url: serverUrl,
        headers: { 'X-Literal': 'sk-literal-value', 'X-Env': '${REFUNDS_TOKEN}' },
      },
    });
    expect(res.json.http).toMatchObject({
      headers: { 'X-Literal': '[redacted]', 'X-Env': '${REFUNDS_TOKEN}' },
    });
    expect((await call('GET', '/v1/tools/')).text).not.toContain('sk-literal-value');
  });

  it('TOOL_INVOKER calls an http tool with the secret resolved on the wire only', async () => {
    const [tool] = await t.app.get(ToolsService).resolveAgentTools('default', ['issue_refund']);
    const invoker = t.app.get<ToolInvoker>(TOOL_INVOKER);
    received.length = 0;
    const r = await invoker.invoke(
      tool,
      { order_id: 'A-1' },
      {
        tenantId: 'default',
        agentId: 'agent-x',
        runId: 'run-1',
        toolCallId: 'call-42',
        signal: new AbortController().signal,
      },
    );
    expect(r).toEqual({ status: 'success', value: '{"refunded":true}' });
    expect(received[0].headers.authorization).toBe('Bearer tok-very-secret-123');
    expect(received[0].headers['idempotency-key']).toBe('call-42');
    expect(JSON.parse(received[0].body)).toEqual({
      arguments: { order_id: 'A-1' },
      agent_id: 'agent-x',
      run_id: 'run-1',
      tool_call_id: 'call-42',
    });
    expect(tool.http?.headers).toEqual({ Authorization: 'Bearer ${REFUNDS_TOKEN}' });
  });

  it("file tools follow their files at each boot: an edit updates, a removal removes; one named like a tenant's tool wins, and the boot says so", async () => {
    const own = mkdtempSync(path.join(tmpdir(), 'tools-sync-'));
    const file = path.join(own, 'tools', 'lookup.yaml');
    const declare = (description: string) =>
      writeFileSync(
        file,
        `name: lookup\ndescription: ${description}\nsafety: read_only\nkind: http\nhttp: { url: "${serverUrl}/lookup" }\n`,
      );
    const named = async (app: TestApp, name: string) =>
      ((await (await fetch(`${app.baseUrl}/v1/tools/?name=${name}`)).json()) as Json[]).map((x) => [
        x.source,
        x.description,
      ]);
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      mkdirSync(path.join(own, 'tools'));
      let app = await startApp({ dir: own });
      // a tenant's own tool, made before the operator's file names one so
      const mine = await fetch(`${app.baseUrl}/v1/tools/`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...httpTool('lookup'), description: "the tenant's" }),
      });
      expect(mine.status).toBe(200);
      const mineId = ((await mine.json()) as Json).id as string;
      const agent = (await (
        await fetch(`${app.baseUrl}/v1/agents/`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ name: 'user', tools: ['lookup'], include_base_tools: false }),
        })
      ).json()) as Json;
      await app.close();

      declare('first');
      app = await startApp({ dir: own });
      expect(await named(app, 'lookup')).toEqual(
        expect.arrayContaining([
          ['file', 'first'],
          ['api', "the tenant's"],
        ]),
      );
      const agentTools = (await (
        await fetch(`${app.baseUrl}/v1/agents/${String(agent.id)}/tools`)
      ).json()) as Json[];
      expect(agentTools.map((x) => [x.source, x.description])).toEqual([['file', 'first']]);
      expect(warn.mock.calls.map((c) => String(c[0]))).toContainEqual(
        expect.stringContaining(
          `tool file ${file}: tool "lookup" has the name of tenant default's own tool ${mineId} (api)`,
        ),
      );
      await app.close();

      declare('second');
      app = await startApp({ dir: own });
      expect(await named(app, 'lookup')).toContainEqual(['file', 'second']);
      await app.close();

      rmSync(file);
      app = await startApp({ dir: own });
      expect(await named(app, 'lookup')).toEqual([['api', "the tenant's"]]);
      await app.close();
    } finally {
      warn.mockRestore();
      rmSync(own, { recursive: true, force: true });
    }
  });

  it('a broken tool file stops the boot, naming file, field and reason', async () => {
    const bad = mkdtempSync(path.join(tmpdir(), 'tools-bad-'));
    try {
      mkdirSync(path.join(bad, 'tools'));
      writeFileSync(
        path.join(bad, 'tools', 'broken.yaml'),
        'name: broken\nsafety: careful\nkind: http\nhttp: { url: "http://127.0.0.1:9" }\n',
      );
      await expect(startApp({ dir: bad })).rejects.toThrow(/broken\.yaml.*safety: must be one of/);
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
