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

/** Letta's conversations.fork: a new conversation sharing the source's in-context messages. */
describe('conversation fork', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;

  beforeAll(async () => {
    env = await startLoopEnv([], {
      overrides: { ...TWO_TENANTS, processing: { max_fork_depth: 2 } },
    });
    ({ t, fake } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const newAgent = () => createAgent(t, fake, { include_base_tools: false }, A);
  const exchange = async (path: string, text: string) => {
    fake.push({ content: `re: ${text}` });
    const res = await api(t, 'POST', path, say(text, { streaming: false }), A);
    expect(res.status).toBe(200);
  };
  const seen = (r: RecordedRequest) => JSON.stringify(r.messages);
  const msgs = (id: string) => `/v1/conversations/${id}/messages`;
  const texts = async (id: string, query = '') =>
    (await api(t, 'GET', `${msgs(id)}?order=asc${query}`, undefined, A)).body.map(
      (m: any) => m.content,
    );

  it('the fork starts with the source history (shared, same ids); afterwards each has its own; tenant B gets 404', async () => {
    const agent = await newAgent();
    const src = (await api(t, 'POST', `/v1/conversations/?agent_id=${agent}`, {}, A)).body.id;
    await exchange(msgs(src), 'before-fork');
    const fork = await api(t, 'POST', `/v1/conversations/${src}/fork`, undefined, A);
    expect(fork.status).toBe(200);
    expect(fork.body).toMatchObject({ agent_id: agent, archived: false });
    expect(fork.body.id).not.toBe(src);

    const srcList = (await api(t, 'GET', `${msgs(src)}?order=asc`, undefined, A)).body;
    const forkList = (await api(t, 'GET', `${msgs(fork.body.id)}?order=asc`, undefined, A)).body;
    expect(forkList.map((m: any) => m.id)).toEqual(srcList.map((m: any) => m.id));

    await exchange(msgs(fork.body.id), 'in-fork');
    expect(seen(fake.requests.at(-1)!)).toContain('re: before-fork');
    await exchange(msgs(src), 'in-source');
    expect(seen(fake.requests.at(-1)!)).not.toContain('in-fork');
    expect(await texts(fork.body.id)).toEqual([
      'before-fork',
      're: before-fork',
      'in-fork',
      're: in-fork',
    ]);
    expect(await texts(src)).toEqual([
      'before-fork',
      're: before-fork',
      'in-source',
      're: in-source',
    ]);

    expect((await api(t, 'POST', `/v1/conversations/${src}/fork`, undefined, B)).status).toBe(404);
    const other = await api(
      t,
      'POST',
      `/v1/conversations/default/fork?agent_id=${agent}`,
      undefined,
      B,
    );
    expect(other.status).toBe(404);
  });

  it('default with agent_id, cut at message_id, hidden, a compacted source, forks of forks up to max_fork_depth', async () => {
    const agent = await newAgent();
    const direct = `/v1/agents/${agent}/messages`;
    for (const text of ['d1', 'd2', 'd3']) await exchange(direct, text);
    const history = (await api(t, 'GET', `${direct}?order=asc`, undefined, A)).body;
    const cutAt = history.find((m: any) => m.content === 're: d2').id;

    const cut = await api(
      t,
      'POST',
      `/v1/conversations/default/fork?agent_id=${agent}&message_id=${cutAt}&hidden=true`,
      undefined,
      A,
    );
    expect(cut.status).toBe(200);
    expect(await texts(cut.body.id)).toEqual(['d1', 're: d1', 'd2', 're: d2']);
    const listed = (await api(t, 'GET', `/v1/conversations/?agent_id=${agent}`, undefined, A)).body;
    expect(listed.map((c: any) => c.id)).not.toContain(cut.body.id);
    expect((await api(t, 'GET', `/v1/conversations/${cut.body.id}`, undefined, A)).status).toBe(
      200,
    );

    // a message out of the source's window (here: another conversation's) is 404; a bad flag is 400
    await exchange(msgs(cut.body.id), 'c1');
    const forked = (await api(t, 'GET', `${msgs(cut.body.id)}?order=asc`, undefined, A)).body;
    const notInDefault = forked.find((m: any) => m.content === 'c1').id;
    const wrong = await api(
      t,
      'POST',
      `/v1/conversations/default/fork?agent_id=${agent}&message_id=${notInDefault}`,
      undefined,
      A,
    );
    expect(wrong.status).toBe(404);
    const flag = await api(
      t,
      'POST',
      `/v1/conversations/${cut.body.id}/fork?hidden=maybe`,
      undefined,
      A,
    );
    expect(flag.status).toBe(400);

    // compacting the source: the fork of it sees the summary and the kept messages, not the summarized ones
    fake.push({ content: 'SUMMARY of d1 d2' });
    expect((await api(t, 'POST', `/v1/agents/${agent}/summarize`, {}, A)).status).toBe(200);
    const fromCompacted = await api(
      t,
      'POST',
      `/v1/conversations/default/fork?agent_id=${agent}`,
      undefined,
      A,
    );
    await exchange(msgs(fromCompacted.body.id), 'f1');
    const context = seen(fake.requests.at(-1)!);
    expect(context).toContain('SUMMARY of d1 d2');
    expect(context).toContain('re: d3');
    expect(context).not.toContain('re: d1');

    // fork of a fork shares both levels; one more level passes processing.max_fork_depth (2)
    const second = await api(t, 'POST', `/v1/conversations/${cut.body.id}/fork`, undefined, A);
    expect(second.status).toBe(200);
    expect(await texts(second.body.id)).toEqual(['d1', 're: d1', 'd2', 're: d2', 'c1', 're: c1']);
    const third = await api(t, 'POST', `/v1/conversations/${second.body.id}/fork`, undefined, A);
    expect(third.status).toBe(400);
    expect(third.body.code).toBe('LIMIT_EXCEEDED');
    expect(third.body.details.limits).toEqual(['processing.max_fork_depth']);
  });

  it('a conversation with a run in progress is refused (409 CONVERSATION_BUSY)', async () => {
    const agent = await newAgent();
    fake.push({ content: 'slow', delayMs: 60_000 });
    const run = await api(t, 'POST', `/v1/agents/${agent}/messages/async`, say('hold'), A);
    await fake.waitForRequests(1);
    const busy = await api(
      t,
      'POST',
      `/v1/conversations/default/fork?agent_id=${agent}`,
      undefined,
      A,
    );
    expect(busy.status).toBe(409);
    expect(busy.body.code).toBe('CONVERSATION_BUSY');
    await api(t, 'POST', `/v1/agents/${agent}/messages/cancel`, {}, A);
    while (
      (await api(t, 'GET', `/v1/runs/${run.body.id}`, undefined, A)).body.status !== 'cancelled'
    )
      await new Promise((r) => setTimeout(r, 10));
  });
});
