/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import type { TestApp } from '../../support/app-harness';
import type { FakeModelServer } from '../../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../../support/processing-fixtures';

const A = TENANT_A;
const B = TENANT_B;

/**
 * A hostile tenant B against the routes added with forks, step feedback, multi-agent export/import and
 * message search dates: A's ids in B's paths, queries and bodies answer 404 (or nothing), and malformed
 * or oversized inputs answer 4xx, never a 500.
 */
describe('security: hostile tenant on forks, steps, agent files, search', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let agentA: string;
  let convA: string;
  let messageA: string;
  let stepA: string;
  let runA: string;
  let agentB: string;
  let convB: string;

  beforeAll(async () => {
    env = await startLoopEnv([], { overrides: TWO_TENANTS });
    ({ t, fake } = env);
    agentA = await createAgent(t, fake, { include_base_tools: false }, A);
    convA = (await api(t, 'POST', `/v1/conversations/?agent_id=${agentA}`, {}, A)).body.id;
    fake.push({ content: 'secret of A' });
    const sent = await api(
      t,
      'POST',
      `/v1/conversations/${convA}/messages`,
      say('private A', { streaming: false }),
      A,
    );
    expect(sent.status).toBe(200);
    const list = (await api(t, 'GET', `/v1/conversations/${convA}/messages`, undefined, A)).body;
    messageA = list.find((m: any) => m.message_type === 'user_message').id;
    stepA = (await api(t, 'GET', `/v1/steps/?agent_id=${agentA}`, undefined, A)).body[0].id;
    runA = (await api(t, 'GET', `/v1/runs/?agent_id=${agentA}`, undefined, A)).body[0].id;
    agentB = await createAgent(t, fake, { include_base_tools: false }, B);
    convB = (await api(t, 'POST', `/v1/conversations/?agent_id=${agentB}`, {}, B)).body.id;
  });
  afterAll(() => env.close());

  const notFound = (r: { status: number }) => expect(r.status).toBe(404);
  /** A 4xx for each input; the answer is shown beside the input that got another. */
  const bad = (r: { status: number; body: any }, input: unknown = '') => {
    const shown = JSON.stringify(input).slice(0, 80);
    expect({ input: shown, status: r.status >= 400 && r.status < 500 ? '4xx' : r.status }).toEqual({
      input: shown,
      status: '4xx',
    });
  };

  it("forks: A's conversation, A's agent as the conversation, A's message as the cut → 404", async () => {
    notFound(await api(t, 'POST', `/v1/conversations/${convA}/fork`, undefined, B));
    notFound(await api(t, 'POST', `/v1/conversations/${agentA}/fork`, undefined, B));
    notFound(
      await api(t, 'POST', `/v1/conversations/default/fork?agent_id=${agentA}`, undefined, B),
    );
    notFound(
      await api(t, 'POST', `/v1/conversations/${convB}/fork?message_id=${messageA}`, undefined, B),
    );
    // B's own conversation with A's agent id beside it: still B's conversation, never A's messages
    const f = await api(t, 'POST', `/v1/conversations/${convB}/fork?agent_id=${agentA}`, {}, B);
    expect(f.status).toBe(200);
    expect(f.body.agent_id).toBe(agentB);
    const seen = await api(t, 'GET', `/v1/conversations/${f.body.id}/messages`, undefined, B);
    expect(JSON.stringify(seen.body)).not.toContain('private A');
  });

  it('forks: malformed queries → 400', async () => {
    const q = (s: string) => api(t, 'POST', `/v1/conversations/${convB}/fork?${s}`, undefined, B);
    for (const s of [
      'message_id=x',
      `message_id=${'m'.repeat(100_000)}`,
      'message_id=message-%00',
      'hidden=yes',
    ])
      bad(await q(s), s);
  });

  it("steps and runs: A's step and run through B's feedback, metrics, trace, lists → 404 or nothing", async () => {
    notFound(await api(t, 'PATCH', `/v1/steps/${stepA}/feedback`, { feedback: 'negative' }, B));
    notFound(await api(t, 'GET', `/v1/steps/${stepA}/metrics`, undefined, B));
    notFound(await api(t, 'GET', `/v1/steps/${stepA}/trace`, undefined, B));
    notFound(await api(t, 'GET', `/v1/runs/${runA}/trace`, undefined, B));
    const listed = await api(t, 'GET', `/v1/steps/?agent_id=${agentA}`, undefined, B);
    expect(listed.body).toEqual([]);
    const cursor = await api(t, 'GET', `/v1/steps/?after=${stepA}`, undefined, B);
    expect(cursor.status).not.toBe(200 + 300); // never a 500
    bad({ status: cursor.status === 200 ? 400 : cursor.status, body: cursor.body });
    expect((await api(t, 'GET', `/v1/steps/${stepA}`, undefined, A)).body.feedback).toBeNull();
  });

  it("runs: A's run id as B's list cursor answers what an id that exists nowhere answers (no existence oracle)", async () => {
    // B has runs older than A's, so a cursor resolved across tenants would page through them
    fake.push({ content: 'older run of B' });
    expect((await api(t, 'POST', `/v1/agents/${agentB}/messages`, say('b'), B)).status).toBe(200);
    fake.push({ content: 'newer run of A' });
    expect((await api(t, 'POST', `/v1/agents/${agentA}/messages`, say('a'), A)).status).toBe(200);
    const newestA = (await api(t, 'GET', `/v1/runs/?agent_id=${agentA}`, undefined, A)).body[0].id;
    const nowhere = newestA.slice(0, -12) + '0'.repeat(12);
    for (const q of ['after', 'before']) {
      const seen = async (id: string) => {
        const r = await api(t, 'GET', `/v1/runs/?${q}=${id}`, undefined, B);
        return { status: r.status, ids: (r.body as any[]).map((x) => x.id) };
      };
      expect({ q, ...(await seen(newestA)) }).toEqual({ q, ...(await seen(nowhere)) });
    }
  });

  it('steps: malformed feedback bodies and filters → 400', async () => {
    const mine = (await api(t, 'GET', '/v1/steps/', undefined, A)).body[0].id;
    const p = `/v1/steps/${mine}/feedback`;
    for (const body of [
      { feedback: ['positive'] },
      { feedback: 'POSITIVE' },
      { tags: Array.from({ length: 100_000 }, (_, i) => `t${i}`) },
      { tags: ['a\u0000b'] },
      { tags: [1] },
      [],
      'positive',
    ])
      bad(await api(t, 'PATCH', p, body, A), body);
    const deep = await fetch(`${t.baseUrl}${p}`, {
      method: 'PATCH',
      headers: { ...A, 'content-type': 'application/json' },
      body: `{"tags":${'['.repeat(50_000)}${']'.repeat(50_000)}}`,
    });
    bad({ status: deep.status, body: null }, 'deep tags');
    for (const s of [
      'feedback=meh',
      'has_feedback=1',
      `model=${'m'.repeat(10_000)}`,
      'start_date=1e400',
      'start_date=2026-13-45',
      'end_date=%00',
      'start_date=2026-02-01&end_date=2026-01-01',
      'limit=-1',
      'limit=1.5',
      'limit=1e400',
      'order=sideways',
    ])
      bad(await api(t, 'GET', `/v1/steps/?${s}`, undefined, A), s);
    // extreme but valid dates are answered, not a 500
    for (const s of ['start_date=0000-01-01', 'end_date=%2B275760-09-13T00:00:00.000Z'])
      expect((await api(t, 'GET', `/v1/steps/?${s}`, undefined, A)).status).toBe(200);
  });

  it("message search: A's agent and conversation in B's body find nothing; bad dates and limits → 400", async () => {
    const search = (body: unknown, h = B) => api(t, 'POST', '/v1/messages/search', body, h);
    const r1 = await search({ query: 'private', agent_id: agentA });
    expect(r1.status).toBe(200);
    expect(r1.body).toEqual([]);
    expect((await search({ query: 'private', conversation_id: convA })).body).toEqual([]);
    expect((await search({ query: 'private' })).body).toEqual([]);
    for (const body of [
      { query: 'x', start_date: 'tomorrow' },
      { query: 'x', end_date: '9'.repeat(100) },
      { query: 'x', limit: -5 },
      { query: 'x', limit: '10; DROP TABLE messages' },
      { query: 'x', agent_id: ['a', 'b'] },
      { query: 'x\u0000y' },
      { query: 'x', agent_id: `${agentA}\u0000` },
      { query: 'x', end_date: '2026-01-01\u0000' },
    ])
      bad(await search(body), body);
    expect((await search({ query: 'x', start_date: '0000-01-01T00:00:00Z' })).status).toBe(200);
  });

  it("multi-agent export: A's agent among B's ids, or A's conversation, → 404 and nothing of A's", async () => {
    const r = await api(t, 'POST', '/v1/agents/export', { agent_ids: [agentB, agentA] }, B);
    notFound(r);
    expect(JSON.stringify(r.body)).not.toContain('private A');
    notFound(
      await api(t, 'GET', `/v1/agents/${agentB}/export?conversation_id=${convA}`, undefined, B),
    );
    notFound(await api(t, 'GET', `/v1/agents/${agentA}/export`, undefined, B));
    for (const body of [
      { agent_ids: Array.from({ length: 100_000 }, () => agentB) },
      { agent_ids: [`${agentB}\u0000`] },
      { agent_ids: 'agent-x' },
      { agent_ids: [{ id: agentB }] },
      { agent_ids: [agentB], scrub_messages: 'perhaps' },
      [],
    ])
      bad(await api(t, 'POST', '/v1/agents/export', body, B));
  });

  it("import: a file naming A's ids creates B's own objects; two concurrent imports never 500", async () => {
    const file = (await api(t, 'GET', `/v1/agents/${agentA}/export`, undefined, A)).body;
    // the file re-labelled with A's stored ids, as a hostile tenant would write it
    file.agents[0].id = agentA;
    file.agents[0].in_context_message_ids = [messageA];
    file.tools = [
      {
        id: 'tool-0',
        name: 'imported_http',
        kind: 'http',
        safety: 'read_only',
        json_schema: { parameters: { type: 'object', properties: {} } },
        http: { url: 'http://127.0.0.1:9/x', method: 'POST' },
      },
    ];
    file.agents[0].tool_ids = ['tool-0'];
    const importFile = async () => {
      const form = new FormData();
      form.append('file', new Blob([JSON.stringify(file)]), 'a.af');
      const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
        method: 'POST',
        headers: B,
        body: form,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const both = await Promise.all([importFile(), importFile()]);
    for (const r of both) expect(r.status).toBeLessThan(500);
    const ok = both.filter((r) => r.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    for (const r of ok) {
      expect(r.body.agent_ids).not.toContain(agentA);
      const mine = await api(t, 'GET', `/v1/agents/${r.body.agent_ids[0]}`, undefined, B);
      expect(mine.status).toBe(200);
    }
    // A's agent, history and tools are untouched
    expect((await api(t, 'GET', `/v1/agents/${agentA}`, undefined, A)).status).toBe(200);
    const toolsA = (await api(t, 'GET', '/v1/tools/', undefined, A)).body;
    expect(toolsA.map((x: any) => x.name)).not.toContain('imported_http');
  });

  it('a tool moved or deleted while an agent uses it: the next run calls the new URL, then none (no stale cache)', async () => {
    const tools = env.tools;
    const decl = (url: string) => ({
      name: 'moving',
      parameters: { type: 'object', properties: {} },
      safety: 'read_only',
      kind: 'http',
      http: { url, method: 'POST' },
    });
    const created = await api(t, 'POST', '/v1/tools/', decl(`${tools.baseUrl}/tool/old`), A);
    expect(created.status).toBe(200);
    const agent = await createAgent(t, fake, { include_base_tools: false, tools: ['moving'] }, A);
    const call = async () => {
      fake.reset(); // a turn ended by the tool leaves the closing reply unread
      fake.push({ tool_calls: [{ name: 'moving', arguments: {} }] }, { content: 'done' });
      const r = await api(t, 'POST', `/v1/agents/${agent}/messages`, say('go'), A);
      expect(r.status).toBe(200);
      return r.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    };
    tools.calls.length = 0;
    await call();
    const moved = await api(
      t,
      'PATCH',
      `/v1/tools/${created.body.id}`,
      { http: { url: `${tools.baseUrl}/tool/new`, method: 'POST' } },
      A,
    );
    expect(moved.status).toBe(200);
    await call();
    expect((await api(t, 'DELETE', `/v1/tools/${created.body.id}`, undefined, A)).status).toBe(200);
    expect((await call()).tool_return).toContain('ToolNotFound');
    expect(tools.calls.map((c) => c.name)).toEqual(['old', 'new']);
  });

  it('forks racing a run of their source, and each other: 200 or 409 CONVERSATION_BUSY, never a 500', async () => {
    const conv = (await api(t, 'POST', `/v1/conversations/?agent_id=${agentB}`, {}, B)).body.id;
    for (let i = 0; i < 5; i++) {
      fake.reset();
      fake.push({ content: `turn ${i}` });
      const [run, ...forks] = await Promise.all([
        api(t, 'POST', `/v1/conversations/${conv}/messages`, say(`m${i}`, { streaming: false }), B),
        api(t, 'POST', `/v1/conversations/${conv}/fork`, undefined, B),
        api(t, 'POST', `/v1/conversations/${conv}/fork?hidden=true`, undefined, B),
      ]);
      expect(run.status).toBe(200);
      for (const f of forks) {
        expect([200, 409]).toContain(f.status);
        if (f.status === 409) expect(f.body.code).toBe('CONVERSATION_BUSY');
        else {
          // the fork holds whole turns: never the run's user message without its reply
          const seen = await api(
            t,
            'GET',
            `/v1/conversations/${f.body.id}/messages?order=asc`,
            undefined,
            B,
          );
          expect(seen.status).toBe(200);
          expect(seen.body.at(-1)?.message_type ?? 'none').not.toBe('user_message');
        }
      }
    }
  });
});
