/* eslint-disable @typescript-eslint/no-explicit-any */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer, RecordedRequest } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../support/processing-fixtures';

const A = TENANT_A;
const B = TENANT_B;

/** reset-messages and compaction (summarize): the context window moves, the stored history stays. */
describe('message context: reset and compaction', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    env = await startLoopEnv([], {
      overrides: TWO_TENANTS,
    });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const newAgent = () => createAgent(t, fake, { include_base_tools: false }, A);
  /** One exchange: the user's text and the model's answer `re: <text>`. */
  const exchange = async (
    agentId: string,
    text: string,
    path = `/v1/agents/${agentId}/messages`,
  ) => {
    fake.push({ content: `re: ${text}` });
    const res = await api(t, 'POST', path, say(text, { streaming: false }), A);
    expect(res.status).toBe(200);
  };
  const contextText = (r: RecordedRequest) => JSON.stringify(r.messages);

  it('reset-messages: the next model call sees only the new message; history and AgentState stay', async () => {
    const id = await newAgent();
    await exchange(id, 'first-secret');
    await exchange(id, 'second-secret');
    const reset = await api(
      t,
      'PATCH',
      `/v1/agents/${id}/reset-messages`,
      { add_default_initial_messages: false },
      A,
    );
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ id, memory: { blocks: [] } });

    await exchange(id, 'after-reset');
    const last = fake.requests.at(-1)!;
    expect(contextText(last)).toContain('after-reset');
    expect(contextText(last)).not.toContain('first-secret');
    expect(contextText(last)).not.toContain('second-secret');
    expect(last.messages.map((m: any) => m.role)).toEqual(['system', 'user']);

    const history = await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`, undefined, A);
    const texts = history.body.map((m: any) => m.content);
    expect(texts).toEqual(
      expect.arrayContaining(['first-secret', 're: second-secret', 'after-reset']),
    );
  });

  it('reset and summarize are refused with 409 AGENT_BUSY while a batch runs; another tenant gets 404', async () => {
    const id = await newAgent();
    fake.push({ content: 'slow', delayMs: 60_000 });
    const run = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('hold'), A);
    await fake.waitForRequests(1);
    const reset = await api(t, 'PATCH', `/v1/agents/${id}/reset-messages`, {}, A);
    expect(reset.status).toBe(409);
    expect(reset.body.code).toBe('AGENT_BUSY');
    const summarize = await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, A);
    expect(summarize.status).toBe(409);
    expect((await api(t, 'PATCH', `/v1/agents/${id}/reset-messages`, {}, B)).status).toBe(404);
    expect((await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, B)).status).toBe(404);
    await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {}, A);
    while (
      (await api(t, 'GET', `/v1/runs/${run.body.id}`, undefined, A)).body.status !== 'cancelled'
    )
      await new Promise((r) => setTimeout(r, 10));
  });

  it('summarize: the model summarizes the older messages; the summary replaces them in context', async () => {
    const id = await newAgent();
    for (const text of ['u1', 'u2', 'u3', 'u4']) await exchange(id, text);
    fake.push({ content: 'SUMMARY: the user said u1 to u3' });
    const res = await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, A);
    expect(res.status).toBe(200);
    // system + 8 messages before; system + summary + the newest exchange after (sliding window keeps 30%)
    expect(res.body).toEqual({
      summary: 'SUMMARY: the user said u1 to u3',
      num_messages_before: 9,
      num_messages_after: 4,
    });
    const summarizer = fake.requests.at(-1)!;
    expect(summarizer.toolNames).toEqual([]);
    expect(contextText(summarizer)).toContain('user: u3');
    expect(contextText(summarizer)).toContain('assistant: re: u2');
    expect(contextText(summarizer)).not.toContain('u4');

    await exchange(id, 'u5');
    const next = contextText(fake.requests.at(-1)!);
    expect(next).toContain('SUMMARY: the user said u1 to u3');
    expect(next).toContain('re: u4');
    expect(next).not.toContain('re: u1');
    // history keeps everything
    const history = await api(t, 'GET', `/v1/agents/${id}/messages?limit=100`, undefined, A);
    expect(history.body.map((m: any) => m.content)).toContain('u1');

    // nothing new to summarize in `all` mode beyond what is there: everything goes into a new summary
    fake.push({ content: 'SUMMARY TWO' });
    const all = await api(
      t,
      'POST',
      `/v1/agents/${id}/summarize`,
      { compaction_settings: { mode: 'all', clip_chars: 7 } },
      A,
    );
    expect(all.body).toEqual({
      summary: 'SUMMARY',
      num_messages_before: 6,
      num_messages_after: 2,
    });
    // the earlier summary was given to the summarizer
    expect(contextText(fake.requests.at(-1)!)).toContain('SUMMARY: the user said u1 to u3');
  });

  it('summarize: a model failure leaves the context unchanged (502 SUMMARIZATION_FAILED); bad settings are 400', async () => {
    const id = await newAgent();
    for (const text of ['k1', 'k2', 'k3']) await exchange(id, text);
    fake.push({ status: 400, body: { error: { message: 'bad request upstream' } } });
    const res = await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, A);
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('SUMMARIZATION_FAILED');
    await exchange(id, 'k4');
    expect(contextText(fake.requests.at(-1)!)).toContain('k1');

    const bad = await api(
      t,
      'POST',
      `/v1/agents/${id}/summarize`,
      { compaction_settings: { mode: 'everything', model: 'openai/gpt-4o' } },
      A,
    );
    expect(bad.status).toBe(400);
    expect(bad.body.details.problems.map((p: any) => p.path)).toEqual([
      'compaction_settings.mode',
      'compaction_settings.model',
    ]);
  });

  it('summarize: a transcript longer than the context window is cut to its newer half and summarized (it wedged the agent)', async () => {
    const id = await newAgent();
    for (let i = 1; i <= 8; i++) await exchange(id, `w${i} ${'y'.repeat(500)}`);
    const overflow = {
      status: 400,
      body: { error: { message: 'Your input exceeds the context window of this model.' } },
    };
    // the endpoint's room: about half of what the summarizer reads at first
    fake.respond((r) =>
      contextText(r).length > 3000 ? overflow : { content: 'SUMMARY of the newer ones' },
    );
    const before = fake.requests.length;
    const res = await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, A);
    expect(res.status).toBe(200);
    expect(res.body.summary).toBe('SUMMARY of the newer ones');
    const [first, ...retries] = fake.requests.slice(before);
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries.length).toBeLessThanOrEqual(2);
    expect(contextText(first)).toContain('user: w1 ');
    const last = fake.requests.at(-1)!;
    expect(contextText(last)).not.toContain('user: w1 ');
    expect(contextText(last)).toContain('user: w6 ');
    expect(last.messages[1].content).toMatch(/^user: w\d /); // cut where a turn starts
    fake.respond(null);
    // and the agent answers again, with the summary in its context
    await exchange(id, 'after');
    expect(contextText(fake.requests.at(-1)!)).toContain('SUMMARY of the newer ones');
  });

  it('summarize: a context overflow that no cut cures is 502 SUMMARIZATION_FAILED saying so', async () => {
    const id = await newAgent();
    for (const text of ['o1', 'o2', 'o3']) await exchange(id, text);
    fake.respond(() => ({
      status: 400,
      body: { error: { message: 'too long', code: 'context_length_exceeded' } },
    }));
    const before = fake.requests.length;
    const res = await api(t, 'POST', `/v1/agents/${id}/summarize`, {}, A);
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('SUMMARIZATION_FAILED');
    expect(res.body.message).toContain("do not fit the model's context window");
    expect(res.body.details).toMatchObject({ kind: 'context_window_exceeded', status: 400 });
    expect(fake.requests.length - before).toBeGreaterThanOrEqual(2);
    expect(fake.requests.length - before).toBeLessThanOrEqual(3);
  });

  it('summarize with nothing in context answers equal counts without calling the model', async () => {
    const id = await newAgent();
    const res = await api(t, 'POST', `/v1/agents/${id}/summarize`, undefined, A);
    expect(res.body).toEqual({ summary: '', num_messages_before: 1, num_messages_after: 1 });
    expect(fake.requests).toHaveLength(0);
  });

  it("conversations.messages.compact compacts the conversation's own context", async () => {
    const id = await newAgent();
    const conv = await api(t, 'POST', `/v1/conversations/?agent_id=${id}`, {}, A);
    expect(conv.status).toBe(200);
    const path = `/v1/conversations/${conv.body.id}/messages`;
    for (const text of ['c1', 'c2', 'c3']) await exchange(id, text, path);
    await exchange(id, 'default-1');
    fake.push({ content: 'CONV SUMMARY' });
    const res = await api(t, 'POST', `/v1/conversations/${conv.body.id}/compact`, {}, A);
    expect(res.body).toEqual({
      summary: 'CONV SUMMARY',
      num_messages_before: 7,
      num_messages_after: 4,
    });
    expect(contextText(fake.requests.at(-1)!)).not.toContain('default-1');
    await exchange(id, 'default-2');
    // the agent's default conversation is untouched
    expect(contextText(fake.requests.at(-1)!)).toContain('default-1');
    expect(contextText(fake.requests.at(-1)!)).not.toContain('CONV SUMMARY');
  });
});
