/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { ProcessingRepository } from '../../src/processing/processing.repository';
import { NOT_STARTED, OUTCOME_UNKNOWN } from '../../src/processing/run-recovery';
import { ToolExecutorService } from '../../src/rules/tool-executor.service';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, FakeToolCall, startFakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  startToolServer,
  ToolServer,
} from '../support/processing-fixtures';

/**
 * An OpenAI-compatible server that is careless with tool_call ids (older llama.cpp / Ollama / vLLM
 * builds, some proxies): every response's first call is `call_0`, and one response has two calls that
 * are both `call_0`. Each call is a call of its own: it runs (or is refused) under the rules as any
 * other, is asked about afresh when it needs consent, and has its return paired with it.
 */
describe('tool_call ids a provider reuses', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup', ['pay', { safety: 'side_effecting' }]]);
    ({ t, fake, tools } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const call = (name: string, q: string): FakeToolCall => ({
    id: 'call_0',
    name,
    arguments: { q },
  });

  /** Letta's in-band approval of the pending call (as Letta's clients send it); the continuation's answer. */
  const approve = async (id: string, toolCallId: string) => {
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: toolCallId, approve: true }],
        },
      ],
    });
    expect(res.status).toBe(200);
    return res.body;
  };

  /** What the model was sent must be valid for OpenAI: each assistant turn's calls answered, once each. */
  function expectPairedHistory(messages: any[]): void {
    messages.forEach((m, i) => {
      if (m.role !== 'assistant' || !m.tool_calls?.length) return;
      const ids = m.tool_calls.map((c: any) => c.id as string);
      expect(new Set(ids).size).toBe(ids.length);
      const answers: string[] = [];
      for (let j = i + 1; j < messages.length && messages[j].role === 'tool'; j++)
        answers.push(messages[j].tool_call_id);
      expect(answers).toEqual(ids);
    });
  }

  it('runs each new call under the rules, asks consent afresh for each, never refuses one as already executed', async () => {
    const id = await createAgent(t, fake, {
      agent_type: 'letta_v1_agent', // the loop goes on after tools until the model answers in text
      tools: ['lookup', 'pay'],
      include_base_tools: false,
      tool_rules: [
        { type: 'max_count_per_step', tool_name: 'lookup', max_count_limit: 3 },
        { type: 'requires_approval', tool_name: 'pay' },
      ],
    });

    // batch 1: call_0 in every response, two call_0 in one, a fourth lookup over the limit, a payment
    fake.push(
      { tool_calls: [call('lookup', 'a')] },
      { tool_calls: [call('lookup', 'b'), call('lookup', 'c')] },
      { tool_calls: [call('lookup', 'd')] },
      { tool_calls: [call('pay', '1')] },
    );
    const first = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('look and pay'))).body;
    expect(first.stop_reason.stop_reason).toBe('requires_approval');
    const returns = first.messages.filter((m: any) => m.message_type === 'tool_return_message');
    expect(returns.map((m: any) => [m.tool_call_id, m.status])).toEqual([
      ['call_0', 'success'],
      ['call_0', 'success'],
      ['call_0_2', 'success'], // the second call_0 of one response gets an id of its own
      ['call_0', 'error'],
    ]);
    expect(returns[3].tool_return).toMatch(/^\[ToolRuleViolation\] .*lookup/);
    const asked1 = first.messages.at(-1);
    expect(asked1).toMatchObject({
      message_type: 'approval_request_message',
      tool_call: { tool_call_id: 'call_0', name: 'pay' },
    });

    fake.push({ content: 'paid 1' });
    const done1 = await approve(id, 'call_0');
    expect(done1.stop_reason.stop_reason).toBe('end_turn');
    expect(done1.messages.filter((m: any) => m.message_type === 'tool_return_message')).toEqual([
      expect.objectContaining({ tool_call_id: 'call_0', name: 'pay', status: 'success' }),
    ]);

    // batch 2: the same id again, for a payment that needs its own approval, and a lookup (new batch)
    fake.push({ tool_calls: [call('pay', '2')] });
    const second = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay again'))).body;
    expect(second.stop_reason.stop_reason).toBe('requires_approval');
    const asked2 = second.messages.at(-1);
    expect(asked2).toMatchObject({
      message_type: 'approval_request_message',
      tool_call: { tool_call_id: 'call_0', name: 'pay', arguments: '{"q":"2"}' },
    });
    expect(asked2.request_id).not.toBe(asked1.request_id);
    expect(tools.calls.filter((c) => c.name === 'pay')).toHaveLength(1); // not run before approval

    fake.push({ tool_calls: [call('lookup', 'e')] }, { content: 'paid 2' });
    const done2 = await approve(id, 'call_0');
    expect(done2.stop_reason.stop_reason).toBe('end_turn');
    expect(
      done2.messages
        .filter((m: any) => m.message_type === 'tool_return_message')
        .map((m: any) => [m.name, m.tool_call_id, m.status]),
    ).toEqual([
      ['pay', 'call_0', 'success'],
      ['lookup', 'call_0', 'success'],
    ]);
    for (const req of [asked1.request_id, asked2.request_id]) {
      const r = (await api(t, 'GET', `/v1/consent/requests/${req}`)).body;
      expect(r).toMatchObject({ status: 'approved', tool_call_id: 'call_0' });
      expect(r.consumed_at).not.toBeNull();
    }

    // the tools ran exactly as the rules allowed: lookups a, b, c (d refused), e; payments 1 and 2
    expect(tools.calls.map((c) => [c.name, c.arguments.q, c.tool_call_id])).toEqual([
      ['lookup', 'a', 'call_0'],
      ['lookup', 'b', 'call_0'],
      ['lookup', 'c', 'call_0_2'],
      ['pay', '1', 'call_0'],
      ['pay', '2', 'call_0'],
      ['lookup', 'e', 'call_0'],
    ]);

    // the history pairs every call (shown as a call, or a parked one as its approval request) with one
    // return, in its step; none was refused as already executed
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=1000`)).body;
    const calls = history.flatMap((m: any) =>
      m.message_type === 'tool_call_message'
        ? [`${m.step_id}/${m.tool_call.tool_call_id}`]
        : m.message_type === 'approval_request_message'
          ? m.tool_calls.map((c: any) => `${m.step_id}/${c.tool_call_id}`)
          : [],
    );
    const answered = history.filter((m: any) => m.message_type === 'tool_return_message');
    expect(answered.map((m: any) => `${m.step_id}/${m.tool_call_id}`).sort()).toEqual(
      [...calls].sort(),
    );
    expect(new Set(calls).size).toBe(calls.length);
    expect(calls).toHaveLength(7);
    expect(answered.some((m: any) => /AlreadyExecuted/.test(m.tool_return))).toBe(false);
    // and so does what the model was sent, at every step
    expect(fake.requests.length).toBeGreaterThan(0);
    for (const r of fake.requests) expectPairedHistory(r.messages);
    const last = fake.requests.at(-1)!.messages;
    expect(last.filter((m: any) => m.role === 'tool')).toHaveLength(7);
  });

  it("a client tool's call_0 in two turns: each parks for the client and takes its own result", async () => {
    const BASH = {
      name: 'Bash',
      description: 'Runs a shell command on the client',
      parameters: { type: 'object', properties: { command: { type: 'string' } } },
    };
    const id = await createAgent(t, fake, {
      agent_type: 'letta_v1_agent',
      tools: ['lookup'],
      include_base_tools: false,
    });
    const bash = (command: string): FakeToolCall => ({
      id: 'call_0',
      name: 'Bash',
      arguments: { command },
    });
    const result = async (out: string) =>
      (
        await api(t, 'POST', `/v1/agents/${id}/messages`, {
          messages: [
            {
              type: 'approval',
              approvals: [
                { type: 'tool', tool_call_id: 'call_0', tool_return: out, status: 'success' },
              ],
            },
          ],
          client_tools: [BASH],
        })
      ).body;
    fake.push({ tool_calls: [bash('ls')] }, { tool_calls: [bash('pwd')] }, { content: 'done' });
    const first = (
      await api(t, 'POST', `/v1/agents/${id}/messages`, say('where', { client_tools: [BASH] }))
    ).body;
    expect(first.messages.at(-1)).toMatchObject({
      message_type: 'approval_request_message',
      tool_call: { tool_call_id: 'call_0', arguments: '{"command":"ls"}' },
    });
    const second = await result('a.txt');
    expect(second.stop_reason.stop_reason).toBe('requires_approval');
    expect(second.messages.at(-1)).toMatchObject({
      message_type: 'approval_request_message',
      tool_call: { tool_call_id: 'call_0', arguments: '{"command":"pwd"}' },
    });
    const third = await result('/home/ann');
    expect(third.stop_reason.stop_reason).toBe('end_turn');
    const returns = [...second.messages, ...third.messages].filter(
      (m: any) => m.message_type === 'tool_return_message',
    );
    expect(returns.map((m: any) => [m.tool_call_id, m.tool_return, m.status])).toEqual([
      ['call_0', 'a.txt', 'success'],
      ['call_0', '/home/ann', 'success'],
    ]);
    for (const r of fake.requests) expectPairedHistory(r.messages);
  });
});

/** Recovery tells the calls of a crashed batch apart by their step, though they share an id. */
describe('tool_call ids a provider reuses: restart recovery', () => {
  it('an answered call_0, a started call_0 and an unstarted call_0 of one batch each end as they stand', async () => {
    const fake = await startFakeModelServer();
    const tools = await startToolServer();
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    try {
      await tools.declare(t, 'lookup');
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      // this instance holds the agent (on PostgreSQL its writes are fenced by the lease)
      fake.push({ content: 'first answer' });
      await api(t, 'POST', `/v1/agents/${id}/messages`, say('before the crash'));
      const repo = t.app.get(ProcessingRepository);
      const now = Date.now();
      const crashed = `run-${randomUUID()}`;
      await repo.insertRun({
        id: crashed,
        tenant_id: 'default',
        agent_id: id,
        status: 'running',
        stop_reason: null,
        batch_id: 'b-reuse',
        input: { kind: 'message', mode: 'async', messages: [{ role: 'user', content: 'look' }] },
        usage: null,
        error: null,
        parked: null,
        continued_by: null,
        conversation_id: null,
        created_at: now,
        started_at: now,
        completed_at: null,
      });
      const row = (step: string, type: string, payload: Record<string, unknown>) => ({
        id: `message-${randomUUID()}`,
        tenant_id: 'default',
        agent_id: id,
        run_id: crashed,
        step_id: step,
        batch_id: 'b-reuse',
        conversation_id: null,
        message_type: type as any,
        payload,
        created_at: now,
      });
      const lookup = (step: string) =>
        row(step, 'tool_call_message', {
          tool_call: { name: 'lookup', arguments: '{}', tool_call_id: 'call_0' },
        });
      await repo.append(id, [
        row('step-a', 'user_message', { content: 'look', _input: true }),
        lookup('step-a'),
        row('step-a', 'tool_return_message', {
          tool_return: 'found',
          status: 'success',
          tool_call_id: 'call_0',
          name: 'lookup',
        }),
        lookup('step-b'),
        lookup('step-c'),
      ]);
      // step-a's call ran (its claim, as the executor writes it), step-b's had started, step-c's not
      const store = t.app.get(ToolExecutorService).store;
      await store.claimToolCall(id, 'call_0', 'step-a', now, 'default');
      await store.claimToolCall(id, 'call_0', 'step-b', now, 'default');
      await t.close();

      t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
      const run = (await api(t, 'GET', `/v1/runs/${crashed}`)).body;
      expect(run).toMatchObject({ status: 'failed', error: 'interrupted' });
      const msgs = (await api(t, 'GET', `/v1/runs/${crashed}/messages`)).body;
      expect(
        msgs
          .filter((m: any) => m.message_type === 'tool_return_message')
          .map((m: any) => [m.step_id, m.tool_call_id, m.tool_return]),
      ).toEqual([
        ['step-a', 'call_0', 'found'],
        ['step-b', 'call_0', OUTCOME_UNKNOWN],
        ['step-c', 'call_0', NOT_STARTED],
      ]);
      expect(tools.calls).toHaveLength(0); // nothing ran again
    } finally {
      await t.close();
      await fake.close();
      await tools.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
