import { connect } from 'node:net';
import { startApp, TestApp } from '../support/app-harness';

/** Bad input of every kind gets a clear 4xx in the one error shape; never a 500. */
describe('bad requests', () => {
  let t: TestApp;
  let agentId: string;

  beforeAll(async () => {
    t = await startApp();
    const res = await fetch(`${t.baseUrl}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'target' }),
    });
    agentId = ((await res.json()) as { id: string }).id;
  });
  afterAll(() => t.close());

  const deep = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  const unknownId = 'agent-00000000-0000-4000-8000-000000000000';

  type Case = {
    name: string;
    method: string;
    path: string | (() => string);
    body?: string;
    status: number;
    code: string;
    problem?: string;
  };
  const json = (v: unknown) => JSON.stringify(v);
  const cases: Case[] = [
    // PostgreSQL text cannot hold NUL: refused at the edge, whatever the route (it was a 500 there)
    ...['/v1/runs/?agent_id=%00', '/v1/tags/?name=a%00b', '/v1/messages/message-%00'].map(
      (path): Case => ({
        name: `a NUL byte in the URL: GET ${path}`,
        method: 'GET',
        path,
        status: 400,
        code: 'VALIDATION_FAILED',
      }),
    ),
    // Letta routes this server has not: a named 404 with the reason, not a route miss
    ...[
      ['GET', '/v1/folders/'],
      ['POST', '/v1/templates/agents'],
      ['GET', '/v1/agents/agent-00000000-0000-4000-8000-000000000000/files'],
      ['POST', '/v1/mcp-servers/mcp_server-1/tools/tool-1/run'],
    ].map(([method, path]): Case => ({
      name: `not supported: ${method} ${path}`,
      method,
      path,
      status: 404,
      code: 'NOT_SUPPORTED',
    })),
    {
      name: 'a NUL byte in a path id: DELETE /v1/secrets/a%00b',
      method: 'DELETE',
      path: '/v1/secrets/a%00b',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'malformed JSON',
      method: 'POST',
      path: '/v1/agents/',
      body: '{"name": ',
      status: 400,
      code: 'MALFORMED_JSON',
    },
    {
      name: 'body is an array',
      method: 'POST',
      path: '/v1/agents/',
      body: '[]',
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: '(body)',
    },
    {
      name: 'name wrong type',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ name: 5 }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'name',
    },
    {
      name: 'rule with a tool the agent lacks',
      method: 'POST',
      path: '/v1/agents/',
      body: json({
        tool_rules: [
          { type: 'exit_loop', tool_name: 'send_message' },
          { type: 'constrain_child_tools', tool_name: 'send_message', children: [] },
        ],
      }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'tool_rules[1].children',
    },
    {
      name: 'unknown rule type',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ tool_rules: [{ type: 'nope' }] }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'tool_rules[0].type',
    },
    {
      name: 'negative limit',
      method: 'POST',
      path: '/v1/agents/',
      body: json({
        tool_rules: [
          { type: 'max_count_per_step', tool_name: 'send_message', max_count_limit: -1 },
        ],
      }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'tool_rules[0].max_count_limit',
    },
    {
      name: 'api_key in llm_config',
      method: 'POST',
      path: '/v1/agents/',
      body: json({
        llm_config: { model: 'gpt-4o', model_endpoint_type: 'openai', api_key: 'sk-secret' },
      }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'llm_config.api_key',
    },
    {
      name: 'block value over its limit',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ memory_blocks: [{ label: 'h', value: 'toolong', limit: 3 }] }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'memory_blocks[0].value',
    },
    {
      name: 'unknown tool name',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ tools: ['ghost'] }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'tools[0]',
    },
    {
      name: 'update with bad field',
      method: 'PATCH',
      path: () => `/v1/agents/${agentId}`,
      body: json({ max_steps: -2 }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'max_steps',
    },
    {
      name: 'nesting deeper than 64',
      method: 'POST',
      path: '/v1/agents/',
      body: `{"metadata": {"x": ${deep(70)}}}`,
      status: 400,
      code: 'JSON_TOO_DEEP',
    },
    {
      name: 'body over 1 MB',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ system: 'x'.repeat(1_100_000) }),
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    },
    {
      name: 'unknown agent id',
      method: 'GET',
      path: `/v1/agents/${unknownId}`,
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'unknown agent id (delete)',
      method: 'DELETE',
      path: `/v1/agents/${unknownId}`,
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'unknown agent id (update)',
      method: 'PATCH',
      path: `/v1/agents/${unknownId}`,
      body: '{}',
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'malformed id',
      method: 'GET',
      path: '/v1/agents/not-an-id',
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'id with NUL',
      method: 'GET',
      path: `/v1/agents/${encodeURIComponent('agent-\u0000x')}`,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'id with ../',
      method: 'GET',
      path: `/v1/agents/${encodeURIComponent('../../etc/passwd')}`,
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'id over 200 chars',
      method: 'GET',
      path: `/v1/agents/agent-${'a'.repeat(250)}`,
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'unknown cursor',
      method: 'GET',
      path: `/v1/agents/?after=${unknownId}`,
      status: 400,
      code: 'UNKNOWN_CURSOR',
    },
    {
      name: 'garbage cursor',
      method: 'GET',
      path: `/v1/agents/?before=${encodeURIComponent('../../x')}`,
      status: 400,
      code: 'UNKNOWN_CURSOR',
    },
    {
      name: 'cursor with NUL',
      method: 'GET',
      path: `/v1/agents/?after=${encodeURIComponent('agent-\u0000')}`,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'bad limit',
      method: 'GET',
      path: '/v1/agents/?limit=-1',
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'limit',
    },
    {
      name: 'unknown tool id',
      method: 'GET',
      path: '/v1/tools/tool-00000000-0000-4000-8000-000000000000',
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'malformed tool id',
      method: 'DELETE',
      path: '/v1/tools/..%2F..%2Fx',
      status: 404,
      code: 'NOT_FOUND',
    },
    {
      name: 'invalid tool declaration',
      method: 'POST',
      path: '/v1/tools/',
      body: json({ name: 'x y', kind: 'http' }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'name',
    },
    {
      name: 'approval flag missing',
      method: 'PATCH',
      path: () => `/v1/agents/${agentId}/tools/approval/send_message`,
      body: '{}',
      status: 400,
      code: 'VALIDATION_FAILED',
    },
  ];

  cases.push(
    {
      name: 'NUL in a body string',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ name: 'a\u0000b' }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'name',
    },
    {
      name: 'NUL in nested metadata',
      method: 'POST',
      path: '/v1/agents/',
      body: json({ metadata: { k: ['x\u0000'] } }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'metadata.k[0]',
    },
    {
      name: 'NUL in a name filter',
      method: 'GET',
      path: `/v1/agents/?name=${encodeURIComponent('a\u0000')}`,
      status: 400,
      code: 'VALIDATION_FAILED',
    },
    {
      name: 'NUL in a tool declaration',
      method: 'POST',
      path: '/v1/tools/',
      body: json({ name: 'x\u0000' }),
      status: 400,
      code: 'VALIDATION_FAILED',
      problem: 'name',
    },
  );

  it.each(cases)('$name → $status $code', async (c) => {
    const res = await fetch(t.baseUrl + (typeof c.path === 'function' ? c.path() : c.path), {
      method: c.method,
      headers: c.body === undefined ? {} : { 'content-type': 'application/json' },
      body: c.body,
    });
    const body = (await res.json()) as {
      code: string;
      message: string;
      details: { problems?: { path: string }[] };
    };
    expect(res.status).toBe(c.status);
    expect(body).toEqual({
      code: c.code,
      message: expect.any(String),
      details: expect.any(Object),
    });
    if (c.problem) expect(body.details.problems!.map((p) => p.path)).toContain(c.problem);
  });

  it("a request line past Node's header limit, or bytes that are not HTTP: the API's error shape", async () => {
    const long = await fetch(`${t.baseUrl}/v1/agents/?name=${'x'.repeat(20_000)}`);
    expect(long.status).toBe(431);
    expect(await long.json()).toEqual({
      code: 'HEADERS_TOO_LARGE',
      message: expect.any(String),
      details: { max_header_bytes: expect.any(Number) },
    });
    const { port } = new URL(t.baseUrl);
    const raw = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(port), '127.0.0.1', () => s.end('NOT HTTP AT ALL\r\n\r\n'));
      let out = '';
      s.on('data', (d) => (out += d.toString()));
      s.on('end', () => resolve(out));
      s.on('error', reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatchObject({
      code: 'MALFORMED_REQUEST',
    });
  });

  it('never echoes a refused key', async () => {
    const res = await fetch(`${t.baseUrl}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ llm_config: { api_key: 'sk-very-secret' } }),
    });
    expect(await res.text()).not.toContain('sk-very-secret');
  });
});
