/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api, TENANT_B, TWO_TENANTS } from '../../support/processing-fixtures';

/**
 * A hostile tenant's agent files, on what an import writes before it is refused. An assistant message's
 * tool calls are stored as messages of their own, and were not counted: a 5 MB file of one message holding
 * 100,000 calls stored 100,000 rows past `agent_files.max_messages` (2,000), and held the server 3 s. An
 * agent naming more tools than `limits.max_tools_per_agent` had every one of them created first (1,000 tool
 * rows written and deleted again) before agent creation refused it.
 */
describe('security: an agent file is bounded before anything is written', () => {
  let t: TestApp;
  const MAX_MESSAGES = 50;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        ...TWO_TENANTS,
        agent_files: { max_messages: MAX_MESSAGES },
        quotas: { tenants: { 'tenant-b': { tools: 5 } } },
      },
    });
  });
  afterAll(() => t.close());

  const importFile = async (file: unknown) => {
    const form = new FormData();
    form.append('file', new Blob([JSON.stringify(file)], { type: 'application/json' }), 'a.af');
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: TENANT_B,
      body: form,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const used = async () =>
    Object.fromEntries(
      (await api(t, 'GET', '/v1/quotas', undefined, TENANT_B)).body.quotas.map((q: any) => [
        q.quota,
        q.used,
      ]),
    );
  const fileWith = (agent: Record<string, unknown>, tools: unknown[] = []) => ({
    agents: [{ id: 'agent-0', name: 'imported', tool_ids: [], block_ids: [], ...agent }],
    tools,
    blocks: [],
  });
  const call = (i: number) => ({
    id: `c${i}`,
    type: 'function',
    function: { name: 'f', arguments: '{}' },
  });

  it('one message holding more tool calls than agent_files.max_messages: 400, no agent', async () => {
    const file = fileWith({
      messages: [
        {
          id: 'm0',
          role: 'assistant',
          content: '',
          tool_calls: Array.from({ length: MAX_MESSAGES + 1 }, (_, i) => call(i)),
        },
      ],
    });
    const res = await importFile(file);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { limits: ['agent_files.max_messages'] },
    });
    expect(res.body.message).toContain(`${MAX_MESSAGES + 1} tool calls`);
    expect((await used()).agents).toBe(0);
    // as many calls as the bound, each with its return, import
    const calls = Array.from({ length: 20 }, (_, i) => call(i));
    const ok = await importFile(
      fileWith({
        messages: [
          { id: 'm0', role: 'assistant', content: '', tool_calls: calls },
          ...calls.map((c) => ({
            id: `r${c.id}`,
            role: 'tool',
            tool_call_id: c.id,
            content: 'ok',
          })),
        ],
      }),
    );
    expect(ok.status).toBe(200);
  });

  it('an agent naming more tools than limits.max_tools_per_agent: 400 before any tool is created', async () => {
    const tools = Array.from({ length: 101 }, (_, i) => ({
      id: `tool-${i}`,
      name: `t${i}`,
      kind: 'http',
      safety: 'read_only',
      json_schema: { parameters: { type: 'object', properties: {} } },
      http: { url: 'http://127.0.0.1:9/x', method: 'POST' },
    }));
    const res = await importFile(fileWith({ tool_ids: tools.map((x) => x.id) }, tools));
    // before: its tools were created up to B's quota of 5, and the sixth was 409 QUOTA_EXCEEDED
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      details: { problems: [{ path: 'agents[0].tool_ids', limit: 'limits.max_tools_per_agent' }] },
    });
    expect((await used()).tools).toBe(0);
  });
});
