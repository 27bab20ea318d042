/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../../support/processing-fixtures';

/**
 * A hostile tenant fills a body (within `server.body_limit_bytes`) with many bad items. Each was named in
 * the answer, one line in the message and one entry in `details.problems`: 900 KB of bad agent secrets was
 * a 139 MB answer after 15 s in which no other request of any tenant was answered (RSS 813 MB), and an
 * agent file of 60,000 tools whose agent names 60,000 tool ids froze the server 9 s (each id was searched
 * for through the whole list). Now an answer names the first 20 problems and counts the rest
 * (`details.more_problems`), and a file's ids are looked up.
 */
describe('security: a body of many bad items', () => {
  const B = { authorization: 'Bearer sk-b' };
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: 'sk-a', tenant: 'a' },
            { key: 'sk-b', tenant: 'b' },
          ],
        },
      },
    });
  });
  afterAll(() => t.close());

  const bodyBytes = (b: unknown) => Buffer.byteLength(JSON.stringify(b));
  /** A 400 naming 20 problems, the rest counted, in an answer of a few KB. */
  const firstProblemsOnly = (res: { status: number; body: any; text?: string }) => {
    expect(res.status).toBe(400);
    expect(res.body.details.problems).toHaveLength(20);
    expect(res.body.details.more_problems).toBeGreaterThan(1000);
    expect(res.body.message).toMatch(/; and \d+ more$/);
    expect(bodyBytes(res.body)).toBeLessThan(16 * 1024);
  };

  it('an agent with 100,000 bad secrets (200 KB; 31 MB of errors before): 400 naming the first 20', async () => {
    const res = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'x', secrets: Array(100_000).fill(1) },
      B,
    );
    firstProblemsOnly(res);
  });

  it.each<[string, string, (agent: string) => unknown]>([
    [
      'messages: 100,000 that are not objects',
      '/v1/agents/{agent}/messages',
      () => ({
        messages: Array(100_000).fill(1),
      }),
    ],
    [
      'one message of 100,000 bad content parts',
      '/v1/agents/{agent}/messages',
      () => ({
        messages: [{ role: 'user', content: Array(100_000).fill(1) }],
      }),
    ],
    [
      'an agent whose initial messages hold 90 × 1,000 bad parts',
      '/v1/agents/',
      () => ({
        name: 'x',
        initial_message_sequence: Array(90).fill({ role: 'user', content: Array(1000).fill(1) }),
      }),
    ],
    [
      'an agent of 20,000 empty tool_exec_environment_variables',
      '/v1/agents/',
      () => ({
        name: 'x',
        tool_exec_environment_variables: Object.fromEntries(
          Array.from({ length: 20_000 }, (_, i) => [`K${i}`, '']),
        ),
      }),
    ],
    [
      'a tool of 20 headers each naming 500 secrets (each header within limits.max_tool_header_value_chars) that are not set',
      '/v1/tools/',
      () => ({
        name: 'many_headers',
        kind: 'http',
        safety: 'read_only',
        parameters: { type: 'object' },
        http: {
          url: 'http://127.0.0.1:9/x',
          headers: Object.fromEntries(
            Array.from({ length: 20 }, (_, h) => [
              `K${h}`,
              Array.from({ length: 500 }, (_, i) => `\${N_${h}_${i}}`).join(''),
            ]),
          ),
        },
      }),
    ],
  ])('%s → 400 naming the first 20, a small answer', async (_name, route, body) => {
    const agent = (await api(t, 'POST', '/v1/agents/', { name: 'target' }, B)).body.id;
    const res = await api(t, 'POST', route.replace('{agent}', agent), body(agent), B);
    firstProblemsOnly(res);
  });

  it('an agent file whose tool has 20 headers each naming 500 secrets (each header within limits.max_tool_header_value_chars) that are not set: 400 naming the first 20 at the tool’s place in the file, the rest counted', async () => {
    const headers = Object.fromEntries(
      Array.from({ length: 20 }, (_, h) => [
        `K${h}`,
        Array.from({ length: 500 }, (_, i) => `\${N_${h}_${i}}`).join(''),
      ]),
    );
    const file = {
      agents: [{ id: 'a', name: 'x', tool_ids: ['t'], block_ids: [] }],
      tools: [
        {
          id: 't',
          name: 'many_headers',
          tool_type: 'custom',
          kind: 'http',
          safety: 'read_only',
          json_schema: { name: 'many_headers', parameters: { type: 'object' } },
          http: { url: 'http://127.0.0.1:9/x', headers },
        },
      ],
      blocks: [],
    };
    const form = new FormData();
    form.append('file', new Blob([JSON.stringify(file)]), 'headers.af');
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: B,
      body: form,
    });
    const body: any = await res.json();
    firstProblemsOnly({ status: res.status, body });
    expect(body.details.problems[0].path).toMatch(/^tools\[0\]\.http\.headers/);
  });

  it('an agent file whose agent names 60,000 tool ids among 60,000 tools (950 KB; each id was searched through the list, 9.4 s with every other request waiting): 400, a small answer', async () => {
    const tools = Array.from({ length: 60_000 }, (_, i) => ({ id: i }));
    const file = {
      agents: [{ id: 'a', name: 'x', tool_ids: Array(60_000).fill(-1), block_ids: [] }],
      tools,
      blocks: [],
    };
    const form = new FormData();
    form.append('file', new Blob([JSON.stringify(file)]), 'bomb.af');
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: B,
      body: form,
    });
    const body: any = await res.json();
    firstProblemsOnly({ status: res.status, body });
    // their count first (checked before anything is created), then the ids the file does not hold
    expect(body.details.problems.slice(0, 2)).toMatchObject([
      { path: 'agents[0].tool_ids', limit: 'limits.max_tools_per_agent' },
      { path: 'agents[0].tool_ids[0]' },
    ]);
  });
});
