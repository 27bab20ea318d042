/* eslint-disable @typescript-eslint/no-explicit-any */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { NOT_STARTED, OUTCOME_UNKNOWN, RunRecovery } from '../../src/processing/run-recovery';
import { ProcessingRepository } from '../../src/processing/processing.repository';
import { MessagingService } from '../../src/processing/messaging.service';
import { AgentProcessor } from '../../src/processing/agent-processor.service';
import type { RunEntity } from '../../src/processing/entities/run.entity';
import { ToolExecutorService } from '../../src/rules/tool-executor.service';
import { PermissionBrokerService } from '../../src/permissions/permission-broker.service';
import { DataSource } from 'typeorm';
import { RunEventsBus } from '../../src/common/run-events';
import { sqlTable } from '../../src/database/sql-names';
import { AGENT_LEASES, type AgentLeases } from '../../src/cluster/agent-leases';
import { startApp, startAppProcess, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  runEnded,
  say,
  startToolServer,
  ToolServer,
} from '../support/processing-fixtures';
import { spawnServer } from '../support/server-process';

/** A run row as a process left it (the fields a test does not care about are null). */
const runRow = (
  agentId: string,
  o: Partial<RunEntity> & Pick<RunEntity, 'id' | 'status' | 'batch_id' | 'input' | 'created_at'>,
): RunEntity => ({
  tenant_id: 'default',
  agent_id: agentId,
  stop_reason: null,
  usage: null,
  error: null,
  parked: null,
  continued_by: null,
  conversation_id: null,
  started_at: null,
  completed_at: null,
  ...o,
});

/**
 * What a process that died mid-turn leaves of a run: the run `running` (its id and batch end in `n`),
 * and `row` to make that turn's message rows (ids: `n`'s first digit, then the row's number).
 */
async function crashedMidTurn(
  t: TestApp,
  agentId: string,
  n: string,
  content: string,
  stepId: string,
) {
  const repo = t.app.get(ProcessingRepository);
  const now = Date.now();
  const crashed = `run-00000000-0000-4000-8000-0000000000${n}`;
  await repo.insertRun(
    runRow(agentId, {
      id: crashed,
      status: 'running',
      batch_id: n,
      input: { kind: 'message', mode: 'async', messages: [{ role: 'user', content }] },
      created_at: now,
      started_at: now,
    }),
  );
  const row = (i: number, type: string, payload: Record<string, unknown>) => ({
    id: `message-00000000-0000-4000-8000-0000000000${n[0]}${i}`,
    tenant_id: 'default',
    agent_id: agentId,
    run_id: crashed,
    step_id: stepId,
    batch_id: n,
    conversation_id: null,
    message_type: type as any,
    payload,
    created_at: now,
  });
  return { repo, now, crashed, row };
}

/**
 * What a process that died while a call ran leaves: its run `running`, with the model step that made the
 * call and the call's tool_call_message (no return).
 */
async function storeRunningCall(
  t: TestApp,
  agentId: string,
  o: { run: string; batch: string; input: string; call: string; step: string; tool: string },
): Promise<void> {
  const repo = t.app.get(ProcessingRepository);
  const now = Date.now();
  await repo.insertRun(
    runRow(agentId, {
      id: o.run,
      status: 'running',
      batch_id: o.batch,
      input: { kind: 'message', mode: 'async', messages: [{ role: 'user', content: o.input }] },
      created_at: now,
    }),
  );
  const ids = { tenant_id: 'default', agent_id: agentId, run_id: o.run, batch_id: o.batch };
  await repo.append(
    agentId,
    [
      {
        ...ids,
        id: o.run.replace('run-', 'message-'),
        step_id: o.step,
        conversation_id: null,
        message_type: 'tool_call_message',
        payload: { tool_call: { name: o.tool, arguments: '{}', tool_call_id: o.call } },
        created_at: now,
      },
    ],
    {
      ...ids,
      id: o.step,
      step_number: 1,
      model: 'fake',
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      finish_reason: 'tool_calls',
      feedback: null,
      tags: null,
      model_call_started_at: null,
      model_call_ns: null,
      created_at: now,
    },
  );
}

/** The agent is free again after recovery: its next message runs and ends end_turn. */
async function takesNextMessage(t: TestApp, fake: FakeModelServer, agentId: string): Promise<void> {
  fake.push({ content: 'next answer' });
  const next = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('next'));
  expect(next.body.stop_reason.stop_reason).toBe('end_turn');
}

/** Crash and restart: nothing lost, nothing run twice. */
describe('processing: restart recovery', () => {
  let fake: FakeModelServer;
  let tools: ToolServer;
  beforeAll(async () => {
    fake = await startFakeModelServer();
    tools = await startToolServer();
  });
  afterAll(async () => {
    await fake.close();
    await tools.close();
  });
  beforeEach(() => {
    fake.reset();
    tools.calls.length = 0;
  });

  it('a run a crash left running ends interrupted, its in-flight call gets an error return; queued runs run after boot', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    await tools.declare(t, 'lookup');
    const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
    fake.push({ content: 'first answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('before the crash'));

    // what a crash mid-tool leaves behind: a running run whose tool call has no return, and a queued run
    const repo = t.app.get(ProcessingRepository);
    const crashed = 'run-00000000-0000-4000-8000-000000000001';
    const queued = 'run-00000000-0000-4000-8000-000000000002';
    await storeRunningCall(t, id, {
      run: crashed,
      batch: '1',
      input: 'crash',
      call: 'call_crash',
      step: 'step-x',
      tool: 'lookup',
    });
    // read after the crashed run's rows: the runs below are not older than it (recovery takes the oldest first)
    const now = Date.now();
    // the claim is written before a tool starts: this call had started
    await t.app
      .get(ToolExecutorService)
      .store.claimToolCall(id, 'call_crash', 'step-x', now, 'default');
    // killed between its claim and its first write: nothing of it is stored but the run
    const early = 'run-00000000-0000-4000-8000-000000000003';
    await repo.insertRun(
      runRow(id, {
        id: early,
        status: 'running',
        batch_id: '3',
        input: {
          kind: 'message',
          mode: 'async',
          messages: [{ role: 'user', content: 'accepted' }],
        },
        created_at: now,
      }),
    );
    await repo.insertRun(
      runRow(id, {
        id: queued,
        status: 'created',
        batch_id: '2',
        input: { kind: 'message', mode: 'async', messages: [{ role: 'user', content: 'queued' }] },
        created_at: now + 1,
      }),
    );
    await t.close();

    fake.push({ content: 'after restart' });
    t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
    try {
      const run = (await api(t, 'GET', `/v1/runs/${crashed}`)).body;
      expect(run).toMatchObject({ status: 'failed', stop_reason: 'error', error: 'interrupted' });
      // its usage is what its stored step used (the run's own is written only at its end)
      expect((await api(t, 'GET', `/v1/runs/${crashed}/usage`)).body).toMatchObject({
        total_tokens: 15,
        step_count: 1,
      });
      const msgs = (await api(t, 'GET', `/v1/runs/${crashed}/messages`)).body;
      expect(msgs.at(-1)).toMatchObject({
        message_type: 'tool_return_message',
        tool_call_id: 'call_crash',
        status: 'error',
        tool_return: OUTCOME_UNKNOWN,
      });
      expect(tools.calls).toHaveLength(0); // never executed again
      // the message the early run was accepted with is in the history, not lost
      expect((await api(t, 'GET', `/v1/runs/${early}`)).body).toMatchObject({
        status: 'failed',
        error: 'interrupted',
      });
      expect((await api(t, 'GET', `/v1/runs/${early}/messages`)).body).toMatchObject([
        { message_type: 'user_message', content: 'accepted' },
      ]);
      const q = await runEnded(t, queued);
      expect(q).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      // the model got a valid history: the interrupted call with its error return
      const last = fake.requests.at(-1)!;
      expect(
        last.messages.some((m: any) => m.role === 'tool' && m.tool_call_id === 'call_crash'),
      ).toBe(true);
      const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
      const seqs = history.map((m: any) => m.seq_id);
      expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b));
      expect(new Set(seqs).size).toBe(seqs.length);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a cancel answered while the run ran on an instance that then died: recovery ends it cancelled, its call never runs', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    await tools.declare(t, 'lookup');
    const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
    // a first message: this instance holds the agent (PostgreSQL: its lease) for the rows below
    fake.push({ content: 'first answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('before'));
    // a run another (now dead) process holds: running in the database, not here
    const run = 'run-00000000-0000-4000-8000-000000000011';
    await storeRunningCall(t, id, {
      run,
      batch: '11',
      input: 'go',
      call: 'call_y',
      step: 'step-y',
      tool: 'lookup',
    });
    const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, { run_ids: [run] });
    expect(cancel.body).toEqual({ [run]: 'cancelled' });
    await t.close();

    t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
    try {
      // what the cancel answered is what happened
      expect((await api(t, 'GET', `/v1/runs/${run}`)).body).toMatchObject({
        status: 'cancelled',
        stop_reason: 'cancelled',
      });
      const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body;
      expect(msgs.at(-1)).toMatchObject({
        message_type: 'tool_return_message',
        tool_call_id: 'call_y',
        status: 'error',
      });
      expect(tools.calls).toHaveLength(0);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a crash mid-turn: a held call that started is shown with its unknown outcome and not run again; one that never started has its consent request denied', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    await tools.declare(t, 'pay', { safety: 'side_effecting' });
    const id = await createAgent(t, fake, { tools: ['pay'], include_base_tools: false });
    // this instance holds the agent (on PostgreSQL its writes are fenced by the lease), as the crashed one did
    fake.push({ content: 'first answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('before the crash'));
    const { repo, now, crashed, row } = await crashedMidTurn(t, id, '11', 'pay 4', 'step-held');
    // what a crash mid-turn leaves: the input, and the turn's calls that may park stored held
    const held = (callId: string) =>
      row(callId === 'call_started' ? 2 : 3, 'tool_call_message', {
        tool_call: { name: 'pay', arguments: '{"q":"4"}', tool_call_id: callId },
        _held: true,
      });
    await repo.append(id, [
      row(1, 'user_message', { content: 'pay 4', _input: true }),
      held('call_started'),
      held('call_asked'),
    ]);
    await t.app
      .get(ToolExecutorService)
      .store.claimToolCall(id, 'call_started', 'step-held', now, 'default');
    // the second call had asked a person when the process died
    const asked = await t.app.get(PermissionBrokerService).check({
      tenantId: 'default',
      agentId: id,
      runId: crashed,
      batchId: '11',
      toolCallId: 'call_asked',
      toolName: 'pay',
      arguments: { q: '5' },
      scope: 'pay',
      timeoutMs: 600_000,
    });
    expect(asked.kind).toBe('pending');
    await t.close();

    t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
    try {
      const msgs = (await api(t, 'GET', `/v1/runs/${crashed}/messages`)).body;
      expect(
        msgs.map((m: any) => [m.message_type, m.tool_call?.tool_call_id ?? m.tool_call_id]),
      ).toEqual([
        ['user_message', undefined],
        ['tool_call_message', 'call_started'],
        ['tool_return_message', 'call_started'],
        ['tool_call_message', 'call_asked'],
        ['tool_return_message', 'call_asked'],
      ]);
      expect(msgs[2].tool_return).toBe(OUTCOME_UNKNOWN);
      // the held row itself is never shown, not even by id
      const heldRow = 'message-00000000-0000-4000-8000-000000000012';
      expect((await api(t, 'GET', `/v1/messages/${heldRow}`)).status).toBe(404);
      const request = (await api(t, 'GET', `/v1/consent/requests/${(asked as any).requestId}`))
        .body;
      expect(request).toMatchObject({ status: 'denied', decided_by: 'system' });
      // the same payment asked for again: refused, its outcome being unknown; nothing runs
      fake.push({ tool_calls: [{ name: 'pay', arguments: { q: '4' } }] }, { content: 'checked' });
      const res = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('pay 4 again'))).body;
      const ret = res.messages.find((m: any) => m.message_type === 'tool_return_message');
      expect(ret.tool_return).toMatch(
        /^\[ToolDeduplicated\] pay was called with these arguments .* outcome is unknown/,
      );
      expect(tools.calls).toHaveLength(0);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a crash mid-turn after a person approved a call of the turn, before the run could park: the approved call runs once after recovery (found by the scale-out soak)', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    await tools.declare(t, 'pay', { safety: 'side_effecting' });
    await tools.declare(t, 'refund', { safety: 'side_effecting' });
    const id = await createAgent(t, fake, {
      tools: ['pay', 'refund'],
      include_base_tools: false,
      tool_rules: [{ type: 'requires_consent', tool_name: 'pay', scope: 'pay' }],
    });
    fake.push({ content: 'first answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('before the crash'));
    const { repo, now, crashed, row } = await crashedMidTurn(t, id, '21', 'pay 5', 'step-early');
    // the turn [pay (asks a person), refund]: pay's request is made and pushed at once, and the person
    // approves it while refund still runs; the process dies before the run parks
    const held = (n: number, name: string, callId: string) =>
      row(n, 'tool_call_message', {
        tool_call: { name, arguments: '{"q":"5"}', tool_call_id: callId },
        _held: true,
      });
    await repo.append(id, [
      row(1, 'user_message', { content: 'pay 5', _input: true }),
      held(2, 'pay', 'call_approved'),
      held(3, 'refund', 'call_running'),
    ]);
    const asked = await t.app.get(PermissionBrokerService).check({
      tenantId: 'default',
      agentId: id,
      runId: crashed,
      batchId: '21',
      toolCallId: 'call_approved',
      toolName: 'pay',
      arguments: { q: '5' },
      scope: 'pay',
      timeoutMs: 600_000,
    });
    expect(asked.kind).toBe('pending');
    const requestId = (asked as any).requestId as string;
    await t.app
      .get(ToolExecutorService)
      .store.claimToolCall(id, 'call_running', 'step-early', now, 'default');
    const decided = await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_once',
    });
    expect(decided.status).toBe(200);
    await t.close();

    fake.push({ content: 'paid' });
    t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
    try {
      expect(await runEnded(t, crashed)).toMatchObject({ status: 'failed', error: 'interrupted' });
      // a message sent now runs after the batch's continuation, if there is one
      fake.push({ content: 'next answer' });
      const next = await api(t, 'POST', `/v1/agents/${id}/messages`, say('next'));
      expect(next.body.stop_reason.stop_reason).toBe('end_turn');
      // the approved call ran once, in the continuation; the one that was running is not run again
      expect(tools.calls.map((c) => [c.name, c.tool_call_id])).toEqual([['pay', 'call_approved']]);
      const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`))
        .body as any[];
      const returns = history.filter((m) => m.message_type === 'tool_return_message');
      expect(returns.map((m) => [m.tool_call_id, m.tool_return])).toEqual([
        ['call_running', OUTCOME_UNKNOWN],
        ['call_approved', 'ok:pay'],
      ]);
      // each call shown once, before its return
      const shown = history
        .filter((m) => m.message_type === 'tool_call_message')
        .map((m) => m.tool_call.tool_call_id);
      expect(shown.sort()).toEqual(['call_approved', 'call_running']);
      const request = (await api(t, 'GET', `/v1/consent/requests/${requestId}`)).body;
      expect(request).toMatchObject({ status: 'approved', decision: 'approve_once' });
      expect(history.map((m) => m.content).filter((c) => typeof c === 'string')).toEqual([
        'before the crash',
        'first answer',
        'pay 5',
        'paid',
        'next',
        'next answer',
      ]);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // a turn with a call that may park (here the client's) holds its calls until its end is known
  const ASK = { name: 'ask_user', description: 'asks the user', parameters: { type: 'object' } };
  it.each([
    ['a turn', [], {}, []],
    [
      'a held turn',
      [{ name: 'ask_user', arguments: {} }],
      { client_tools: [ASK] },
      [['error', NOT_STARTED]],
    ],
  ])(
    'kill -9 during the second call of %s: the first call keeps its result; only the calls that had not finished get an error return',
    async (_turn, more, request, moreReturns) => {
      // on PostgreSQL the restart takes the killed instance's agents back at once (same instance id)
      const cluster = { cluster: { instance_id: 'recovery-kill' } };
      let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl, overrides: cluster });
      const dir = t.dir;
      await tools.declare(t, 'pay', { safety: 'side_effecting' });
      const id = await createAgent(t, fake, { tools: ['pay'], include_base_tools: false });
      await t.close();
      let secondStarted!: () => void;
      const second = new Promise<void>((r) => (secondStarted = r));
      tools.handle('pay', async (c, hungUp) => {
        if (c.arguments.q === 'B') {
          secondStarted();
          await hungUp; // its process dies while it runs
        }
        return { body: `paid ${String(c.arguments.q)}` };
      });
      fake.push({
        tool_calls: [
          { name: 'pay', arguments: { q: 'A' } },
          { name: 'pay', arguments: { q: 'B' } },
          ...more,
        ],
      });
      const server = await startAppProcess(dir, { modelBaseUrl: fake.baseUrl, overrides: cluster });
      let run: string;
      try {
        const at = { baseUrl: server.url } as TestApp;
        run = (await api(at, 'POST', `/v1/agents/${id}/messages/async`, say('pay', request))).body
          .id;
        await second;
      } finally {
        await server.kill('SIGKILL');
      }

      fake.push({ content: 'A is paid; B may be' });
      t = await startApp({ dir, modelBaseUrl: fake.baseUrl, overrides: cluster });
      try {
        expect(await runEnded(t, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
        const calls = msgs
          .filter((m) => m.message_type === 'tool_call_message')
          .map((m) => m.tool_call.tool_call_id);
        const returns = [['success', 'paid A'], ['error', OUTCOME_UNKNOWN], ...moreReturns].map(
          (r, i) => [calls[i], ...r],
        );
        expect(
          msgs
            .filter((m) => m.message_type === 'tool_return_message')
            .map((m) => [m.tool_call_id, m.status, m.tool_return]),
        ).toEqual(returns);
        expect(tools.calls.map((c) => c.arguments.q)).toEqual(['A', 'B']); // neither runs again
        // the next message: the model sees A's result
        const next = await api(t, 'POST', `/v1/agents/${id}/messages`, say('status?'));
        expect(next.body.stop_reason.stop_reason).toBe('end_turn');
        const seen = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
        expect(seen.map((m: any) => [m.tool_call_id, m.content])).toEqual(
          returns.map(([call, , text]) => [call, text]),
        );
      } finally {
        await t.close();
        rmSync(dir, { recursive: true, force: true });
      }
    },
    // two boots of the app and one of a server process: slow on a loaded machine
    120_000,
  );

  it('kill -9 while an approved call runs, with a call of its turn held behind it: the held call is never run, and gets one return saying it did not start', async () => {
    const cluster = { cluster: { instance_id: 'recovery-held' } };
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl, overrides: cluster });
    const dir = t.dir;
    await tools.declare(t, 'pay', { safety: 'side_effecting' });
    await tools.declare(t, 'receipt', { safety: 'side_effecting' });
    const id = await createAgent(t, fake, {
      tools: ['pay', 'receipt'],
      include_base_tools: false,
      tool_rules: [
        { type: 'requires_approval', tool_name: 'pay' },
        { type: 'parent_last_tool', tool_name: 'pay', children: ['receipt'] },
      ],
    });
    await t.close();
    let payStarted!: () => void;
    const paying = new Promise<void>((r) => (payStarted = r));
    tools.handle('pay', async (_c, hungUp) => {
      payStarted();
      await hungUp; // its process dies while it runs
      return { body: 'paid' };
    });
    fake.push({
      tool_calls: [
        { id: 'call_pay', name: 'pay', arguments: { q: 'A' } },
        { id: 'call_receipt', name: 'receipt', arguments: { q: 'A' } },
      ],
    });
    const server = await startAppProcess(dir, { modelBaseUrl: fake.baseUrl, overrides: cluster });
    let cont: string;
    try {
      const at = { baseUrl: server.url } as TestApp;
      const parked = (await api(at, 'POST', `/v1/agents/${id}/messages`, say('pay'))).body;
      expect(parked.stop_reason.stop_reason).toBe('requires_approval');
      expect(parked.messages.at(-1).tool_calls.map((c: any) => c.tool_call_id)).toEqual([
        'call_pay',
      ]);
      cont = (
        await api(at, 'POST', `/v1/agents/${id}/messages/async`, {
          messages: [
            {
              type: 'approval',
              approvals: [{ type: 'approval', tool_call_id: 'call_pay', approve: true }],
            },
          ],
        })
      ).body.id;
      await paying;
    } finally {
      await server.kill('SIGKILL');
    }

    fake.push({ content: 'pay may have gone through; no receipt' });
    t = await startApp({ dir, modelBaseUrl: fake.baseUrl, overrides: cluster });
    try {
      expect(await runEnded(t, cont)).toMatchObject({ status: 'failed', error: 'interrupted' });
      const msgs = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`))
        .body as any[];
      expect(
        msgs
          .filter((m) => m.message_type === 'tool_return_message')
          .map((m) => [m.tool_call_id, m.status, m.tool_return]),
      ).toEqual([
        ['call_pay', 'error', OUTCOME_UNKNOWN],
        ['call_receipt', 'error', NOT_STARTED],
      ]);
      expect(tools.calls.map((c) => c.name)).toEqual(['pay']); // the receipt never ran
      // nothing is left parked: the next message runs
      const next = await api(t, 'POST', `/v1/agents/${id}/messages`, say('status?'));
      expect(next.body.stop_reason.stop_reason).toBe('end_turn');
      expect(tools.calls.map((c) => c.name)).toEqual(['pay']);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  // one process holds every agent on SQLite: its lease never lapses
  const pgOnly = process.env.TEST_DATABASE_URL ? it : it.skip;
  if (!process.env.TEST_DATABASE_URL)
    console.log('processing recovery: the lease rows are skipped: TEST_DATABASE_URL is not set');
  /**
   * One of two instances in this one process: each its own instance id (one would take the other's agents
   * back as its own from an earlier boot); no renewal comes during a test.
   */
  const instance = (instance_id: string) => ({
    cluster: { instance_id, lease_duration_ms: 600_000, lease_renew_interval_ms: 300_000 },
  });
  /** The first of two instances (its folder kept: the second boots on its database). */
  const firstInstance = () =>
    startApp({ keepDir: true, modelBaseUrl: fake.baseUrl, overrides: instance('instance-a') });
  /** `a` stalls past the agent's lease; a second instance boots on its database and takes the agent. */
  async function takenOver(a: TestApp, agentId: string): Promise<TestApp> {
    await a.app
      .get(DataSource)
      .query(
        `UPDATE ${sqlTable(a.config.database.schema, 'agent_leases')} SET expires_at = 0 WHERE agent_id = $1`,
        [agentId],
      );
    return startApp({ dir: a.dir, modelBaseUrl: fake.baseUrl, overrides: instance('instance-b') });
  }
  /** An app with an agent that calls `lookup`, and what makes the agent's lease lapse. */
  async function lapsingLease(): Promise<{ t: TestApp; id: string; lapse: () => Promise<void> }> {
    // no renewal comes during the test: one would extend the lapsed lease again
    const t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: { cluster: { lease_duration_ms: 600_000, lease_renew_interval_ms: 300_000 } },
    });
    await tools.declare(t, 'lookup');
    const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
    const leases = sqlTable(t.config.database.schema, 'agent_leases');
    // the renewal missed its deadline: the lease expires, and no other instance takes the agent
    const lapse = async () => {
      await t.app
        .get(DataSource)
        .query(`UPDATE ${leases} SET expires_at = 0 WHERE agent_id = $1`, [id]);
    };
    return { t, id, lapse };
  }

  /** A run whose `lookup` call is running when the lease lapses; `finish` makes the tool answer 'found it'. */
  async function lapsedInTool(
    t: TestApp,
    id: string,
    lapse: () => Promise<void>,
  ): Promise<{ run: string; finish: () => void }> {
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    tools.handle('lookup', async () => {
      started();
      await finished;
      return { body: 'found it' };
    });
    fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
    const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up'))).body
      .id as string;
    await toolStarted;
    await lapse();
    return { run, finish };
  }

  /** Resolves once `run` is given up to recovery on `t` (its writes refused: its tenure is over). */
  function givenUp(t: TestApp, run: string): Promise<void> {
    const processor = t.app.get<any>(AgentProcessor);
    const leave = processor.leaveToRecovery.bind(processor);
    return new Promise((gaveUp) => {
      jest.spyOn(processor, 'leaveToRecovery').mockImplementation((ctx: any) => {
        leave(ctx);
        if (ctx.run.id === run) gaveUp();
      });
    });
  }

  /** Runs `write`; what it throws (a refusal) is noted in `refused`, and thrown on. */
  async function noting<T>(refused: unknown[], write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (e) {
      refused.push(e);
      throw e;
    }
  }

  /** Another instance took the agent, ended the run (recovery) and let it go: a new owner, token + 1. */
  async function endedElsewhere(t: TestApp, id: string, run: string): Promise<void> {
    const ds = t.app.get(DataSource);
    const schema = t.config.database.schema;
    await ds.query(
      `UPDATE ${sqlTable(schema, 'agent_leases')} SET owner = 'other/1', token = token + 1, expires_at = 0 WHERE agent_id = $1`,
      [id],
    );
    await ds.query(
      `UPDATE ${sqlTable(schema, 'runs')} SET status = 'failed', error = 'interrupted' WHERE id = $1`,
      [run],
    );
  }

  pgOnly(
    'the agent’s lease lapses while a tool runs and no other instance takes the agent: the run is recovered here, its call gets a return, the next message runs',
    async () => {
      const { t, id, lapse } = await lapsingLease();
      try {
        const { run, finish } = await lapsedInTool(t, id, lapse);
        finish(); // the tool answers; the fence refuses the return this instance would write

        expect(await runEnded(t, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
        const call = msgs.find((m) => m.message_type === 'tool_call_message').tool_call
          .tool_call_id;
        expect(msgs.at(-1)).toMatchObject({
          message_type: 'tool_return_message',
          tool_call_id: call,
          status: 'error',
          tool_return: OUTCOME_UNKNOWN,
        });
        await takesNextMessage(t, fake, id);
        const toolMessages = fake.requests.at(-1)!.messages.filter((m: any) => m.role === 'tool');
        expect(toolMessages.map((m: any) => m.tool_call_id)).toEqual([call]);
        expect(tools.calls).toHaveLength(1);
      } finally {
        await t.close();
      }
    },
  );

  pgOnly(
    'the lease lapses as a call’s return is written and the keeper’s sweep takes the agent back while the run still stops: that run is recovered too',
    async () => {
      const { t, id, lapse } = await lapsingLease();
      try {
        const repo = t.app.get(ProcessingRepository);
        const append = repo.append.bind(repo);
        const runsOfAgent = repo.runsOfAgent.bind(repo);
        let sweepCame!: () => void;
        const swept = new Promise<void>((r) => (sweepCame = r));
        let lapsed = false;
        // the run goes on only once the sweep is taking the agent back: it asks the run to stop (before
        // it reads the agent's running runs), or it has read them
        jest.spyOn(repo, 'runsOfAgent').mockImplementation(async (agentId, status) => {
          const runs = await runsOfAgent(agentId, status);
          if (lapsed && status === 'running') setImmediate(sweepCame);
          return runs;
        });
        const processor = t.app.get(AgentProcessor);
        const stop = processor.stop.bind(processor);
        jest.spyOn(processor, 'stop').mockImplementation((runId, why) => {
          if (lapsed) setImmediate(sweepCame);
          return stop(runId, why);
        });
        jest.spyOn(repo, 'append').mockImplementation(async (agentId, rows, step) => {
          if (lapsed || !rows.some((r) => r.message_type === 'tool_return_message'))
            return append(agentId, rows, step);
          lapsed = true;
          await lapse();
          try {
            return await append(agentId, rows, step); // LEASE_LOST
          } finally {
            void t.app.get(MessagingService).takeOrphanedAgents(); // the keeper's sweep
            await swept;
          }
        });
        fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
        const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up')))
          .body.id;
        expect(await runEnded(t, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
        expect(msgs.at(-1)).toMatchObject({
          message_type: 'tool_return_message',
          tool_return: OUTCOME_UNKNOWN,
        });
        await takesNextMessage(t, fake, id);
        expect(tools.calls).toHaveLength(1);
      } finally {
        jest.restoreAllMocks();
        await t.close();
      }
    },
  );

  pgOnly(
    'another instance takes the agent while two read-only calls of a turn run here: this one’s return is refused by the fence, the other call is told to stop, the turn’s next call never starts; the new holder’s recovery gives each its return',
    async () => {
      const a = await firstInstance();
      let b: TestApp | undefined;
      try {
        let answer!: () => void;
        const beside = await callsBeside(a, new Promise<void>((r) => (answer = r)));
        const { id } = beside;
        const run = (await api(a, 'POST', `/v1/agents/${id}/messages/async`, say('look around')))
          .body.id as string;
        await beside.slowStarted;
        b = await takenOver(a, id); // its recovery ends the run
        expect(await runEnded(b, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        answer(); // fast answers on the instance that lost the agent
        await toldToStopAndRecovered(b, id, run, beside);
      } finally {
        await b?.close();
        await a.close();
        rmSync(a.dir, { recursive: true, force: true });
      }
    },
  );

  pgOnly(
    'this instance stalls past its lease mid-tool; another takes the agent, recovers the run and writes past the seq_ids cached here: the late return is refused LEASE_LOST on its first try, never by the seq_id index; nothing of it is stored, the run stays as the new holder ended it',
    async () => {
      const a = await firstInstance();
      let b: TestApp | undefined;
      try {
        await tools.declare(a, 'lookup');
        const id = await createAgent(a, fake, { tools: ['lookup'], include_base_tools: false });
        const { run, finish } = await lapsedInTool(a, id, () => Promise.resolve());
        b = await takenOver(a, id); // its recovery ends the run
        expect(await runEnded(b, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        // the new holder writes rows of its own: the seq_ids cached here, and the ones after, are taken
        for (const words of ['first', 'second']) {
          fake.push({ content: `answer to ${words}` });
          const r = await api(b, 'POST', `/v1/agents/${id}/messages`, say(words));
          expect(r.body.stop_reason.stop_reason).toBe('end_turn');
        }

        // the tool answers here: every try of writing its return, and the moment the run is given up
        const repo = a.app.get(ProcessingRepository);
        const append = repo.append.bind(repo);
        const lateWrites: unknown[] = [];
        // its return (an internal failure once the executor's record of the answer was refused too)
        jest
          .spyOn(repo, 'append')
          .mockImplementation((...args) =>
            args[1].some((m) => m.message_type === 'tool_return_message' && m.run_id === run)
              ? noting(lateWrites, () => append(...args))
              : append(...args),
          );
        const left = givenUp(a, run);
        finish();
        await left;

        expect(lateWrites.map((e: any) => e?.code ?? String(e))).toEqual(['LEASE_LOST']);
        const history = (await api(b, 'GET', `/v1/agents/${id}/messages?limit=100`)).body as any[];
        expect(
          history.filter((m) => m.message_type === 'tool_return_message').map((m) => m.tool_return),
        ).toEqual([OUTCOME_UNKNOWN]);
        expect(new Set(history.map((m) => m.id)).size).toBe(history.length);
        expect((await api(b, 'GET', `/v1/runs/${run}`)).body).toMatchObject({
          status: 'failed',
          error: 'interrupted',
        });
        expect(tools.calls.map((c) => c.name)).toEqual(['lookup']);
        // the agent goes on at the new holder, for a message sent to either instance
        for (const [t, words] of [
          [b, 'third'],
          [a, 'fourth'],
        ] as const) {
          fake.push({ content: `answer to ${words}` });
          const r = await api(t, 'POST', `/v1/agents/${id}/messages`, say(words));
          expect(r.status).toBe(200);
          expect(r.body.messages.at(-1)).toMatchObject({ content: `answer to ${words}` });
        }
      } finally {
        jest.restoreAllMocks();
        await b?.close();
        await a.close();
        rmSync(a.dir, { recursive: true, force: true });
      }
    },
  );

  pgOnly(
    'this instance stalls past its lease mid-tool; another takes the agent and recovers the run; then the tool answers here: the executor’s late state writes are refused too, so the new holder’s “outcome unknown” dedupe entry stays and the batch state its recovery dropped is not written again',
    async () => {
      const a = await firstInstance();
      let b: TestApp | undefined;
      try {
        // side_effecting: deduped by default, so recovery remembers the started call's outcome as unknown
        await tools.declare(a, 'lookup', { safety: 'side_effecting' });
        const id = await createAgent(a, fake, { tools: ['lookup'], include_base_tools: false });
        const { run, finish } = await lapsedInTool(a, id, () => Promise.resolve());
        b = await takenOver(a, id); // its recovery ends the run
        expect(await runEnded(b, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
        const ds = b.app.get(DataSource);
        const table = (name: string) => sqlTable(b!.config.database.schema, name);
        const [{ batch_id: batch }] = await ds.query(
          `SELECT batch_id FROM ${table('runs')} WHERE id = $1`,
          [run],
        );
        const stored = async () => ({
          dedupe: await ds.query(
            `SELECT result, outcome_unknown FROM ${table('executor_dedupe')} WHERE agent_id = $1`,
            [id],
          ),
          batches: await ds.query(
            `SELECT batch_id FROM ${table('executor_batches')} WHERE batch_id = $1`,
            [batch],
          ),
        });
        const recovered = {
          dedupe: [{ result: OUTCOME_UNKNOWN, outcome_unknown: true }],
          batches: [],
        };
        expect(await stored()).toEqual(recovered);

        // the tool answers on the instance that lost the agent: its run goes as far as it can
        const store = a.app.get(ToolExecutorService).store;
        const saveBatch = store.saveBatch.bind(store);
        const refused: unknown[] = [];
        jest
          .spyOn(store, 'saveBatch')
          .mockImplementation((...args) => noting(refused, () => saveBatch(...args)));
        const left = givenUp(a, run);
        finish();
        await left;

        // nothing of the late success is stored: an identical call stays refused, never answered from it
        expect(await stored()).toEqual(recovered);
        expect(refused.map((e: any) => e?.code ?? String(e))).toEqual(['LEASE_LOST']);
        expect(tools.calls.map((c) => c.name)).toEqual(['lookup']);
      } finally {
        jest.restoreAllMocks();
        await b?.close();
        await a.close();
        rmSync(a.dir, { recursive: true, force: true });
      }
    },
  );

  pgOnly(
    'the lease lapses while a tool runs, another instance ends the run and lets the agent go, a message brings it back here: the old run stops, it calls no model and runs nothing more',
    async () => {
      const { t, id, lapse } = await lapsingLease();
      try {
        const { run, finish } = await lapsedInTool(t, id, lapse);
        await endedElsewhere(t, id, run);
        // this instance has not noticed yet, but its own deadline has passed: the next message takes it back
        t.app.get<{ mine: Map<string, { until: number }> }>(AGENT_LEASES).mine.get(id)!.until = 0;
        fake.push({ content: 'next answer' });
        const next = api(t, 'POST', `/v1/agents/${id}/messages`, say('next'));
        setTimeout(finish, 200); // the tool answers once the agent is back here
        const answered = await next;
        expect(answered.body.stop_reason.stop_reason).toBe('end_turn');
        expect(answered.body.messages.at(-1)).toMatchObject({ content: 'next answer' });
        // the old run went no further: one model call for it, one for the next message
        expect(fake.requests).toHaveLength(2);
        const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
        expect(msgs.map((m) => m.tool_return)).not.toContain('found it');
        expect((await api(t, 'GET', `/v1/runs/${run}`)).body).toMatchObject({ status: 'failed' });
      } finally {
        await t.close();
      }
    },
  );

  pgOnly(
    'a tool’s answer is on its way to the database (the executor’s record of it, then its return) when the agent comes back here under a new lease token: the fence of the lost tenure refuses both',
    async () => {
      const { t, id, lapse } = await lapsingLease();
      try {
        const { run, finish } = await lapsedInTool(t, id, lapse);
        await endedElsewhere(t, id, run);
        const ds = t.app.get(DataSource);
        const batches = sqlTable(t.config.database.schema, 'executor_batches');
        const [{ batch_id: batch }] = await ds.query(
          `SELECT batch_id FROM ${sqlTable(t.config.database.schema, 'runs')} WHERE id = $1`,
          [run],
        );
        // the old run's first write once its tool answered, the batch state, is in flight (a slow
        // connection, a stalled event loop) until this instance has taken the agent back
        const leases = t.app.get<AgentLeases & { mine: Map<string, { until: number }> }>(
          AGENT_LEASES,
        );
        const acquire = leases.acquire.bind(leases);
        let back!: () => void;
        const reacquired = new Promise<void>((r) => (back = r));
        jest.spyOn(leases, 'acquire').mockImplementation(async (tenantId, agentId) => {
          const got = await acquire(tenantId, agentId);
          back();
          return got;
        });
        const refused: unknown[] = [];
        const store = t.app.get(ToolExecutorService).store;
        const saveBatch = store.saveBatch.bind(store);
        let sent!: () => void;
        const inFlight = new Promise<void>((r) => (sent = r));
        jest.spyOn(store, 'saveBatch').mockImplementation(async (...args) => {
          if (args[0] !== batch) return saveBatch(...args);
          sent();
          await reacquired;
          return noting(refused, () => saveBatch(...args));
        });
        const repo = t.app.get(ProcessingRepository);
        const append = repo.append.bind(repo);
        jest
          .spyOn(repo, 'append')
          .mockImplementation((agentId, rows, ...rest) =>
            rows.some((r) => r.run_id === run)
              ? noting(refused, () => append(agentId, rows, ...rest))
              : append(agentId, rows, ...rest),
          );
        const left = givenUp(t, run);
        finish();
        await inFlight;
        leases.mine.get(id)!.until = 0; // its own deadline has passed: the next message takes it back
        await takesNextMessage(t, fake, id);
        const returns = async () =>
          ((await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[]).filter(
            (m) => m.message_type === 'tool_return_message',
          );
        // the old run stops at the refused return: nothing of its answer is stored
        await left;
        expect(refused.map((e: any) => e?.code ?? String(e))).toEqual(['LEASE_LOST', 'LEASE_LOST']);
        expect(await returns()).toEqual([]);
        expect(await ds.query(`SELECT 1 FROM ${batches} WHERE batch_id = $1`, [batch])).toEqual([]);
        expect((await api(t, 'GET', `/v1/runs/${run}`)).body).toMatchObject({ status: 'failed' });
      } finally {
        jest.restoreAllMocks();
        await t.close();
      }
    },
  );

  /**
   * What the database refuses while a refusal is on (a full disk, a constraint): a trigger on the table, so
   * the refusal is the database's own error on either engine. Every tool return; every run's end (a run
   * may start, and everything it writes but its end is stored).
   */
  const REFUSALS = {
    tool_returns: {
      table: 'messages',
      event: 'INSERT',
      when: `NEW.message_type = 'tool_return_message'`,
    },
    run_ends: {
      table: 'runs',
      event: 'UPDATE',
      when: `OLD.status = 'running' AND NEW.status <> 'running'`,
    },
  };

  /** Turns a refusal on, or off (space freed). */
  async function refuse(t: TestApp, what: keyof typeof REFUSALS, on: boolean): Promise<void> {
    const { table, event, when } = REFUSALS[what];
    const ds = t.app.get(DataSource);
    const schema = t.config.database.schema;
    const target = sqlTable(schema, table);
    const name = `refuse_${what}`;
    if (!process.env.TEST_DATABASE_URL) {
      await ds.query(
        on
          ? `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} WHEN ${when}
             BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`
          : `DROP TRIGGER ${name}`,
      );
      return;
    }
    const fn = sqlTable(schema, name);
    if (!on) {
      await ds.query(`DROP TRIGGER ${name} ON ${target}`);
      await ds.query(`DROP FUNCTION ${fn}()`);
      return;
    }
    await ds.query(
      `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
         IF ${when} THEN
           RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';
         END IF;
         RETURN NEW;
       END $$`,
    );
    await ds.query(
      `CREATE TRIGGER ${name} BEFORE ${event} ON ${target} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
    );
  }

  it('the database refuses a tool’s return (disk full): the run is left to recovery, and once writes pass again the call gets its unknown outcome before the next message runs', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      await tools.declare(t, 'lookup');
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      await refuse(t, 'tool_returns', true);
      // recovery runs at once, and is refused too while the disk is still full
      const refused = recoveryRefused(t);
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
      const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up'))).body
        .id as string;
      await refused;
      expect(tools.calls).toHaveLength(1);
      // what the API answers meanwhile: the run has not ended (its call has no stored outcome)
      expect((await api(t, 'GET', `/v1/runs/${run}`)).body.status).toBe('running');

      await refuse(t, 'tool_returns', false); // space freed
      await takesNextMessage(t, fake, id);
      expect(await runEnded(t, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
      const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
      const call = msgs.find((m) => m.message_type === 'tool_call_message').tool_call.tool_call_id;
      expect(msgs.at(-1)).toMatchObject({
        message_type: 'tool_return_message',
        tool_call_id: call,
        status: 'error',
        tool_return: OUTCOME_UNKNOWN,
      });
      // the next model request carries the call with its return (no call without a result)
      const sent = fake.requests.at(-1)!.messages;
      const asked = sent.findIndex((m: any) => m.tool_calls?.some((c: any) => c.id === call));
      expect(asked).toBeGreaterThan(0);
      expect(sent[asked + 1]).toMatchObject({ role: 'tool', tool_call_id: call });
      expect(tools.calls).toHaveLength(1); // never run again
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  it('while the database refuses the writes that would recover an agent, a direct tool run on it is 503 AGENT_RECOVERING (one instance: nobody else holds it), and runs once they pass', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      await tools.declare(t, 'lookup');
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      await refuse(t, 'tool_returns', true);
      const refused = recoveryRefused(t);
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
      await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up'));
      await refused;

      const direct = await api(t, 'POST', `/v1/agents/${id}/tools/lookup/run`, { args: {} });
      expect(direct.status).toBe(503);
      expect(direct.body).toMatchObject({
        code: 'AGENT_RECOVERING',
        details: { agent_id: id },
      });
      expect(direct.body.message).not.toContain('another instance');
      expect(tools.calls).toHaveLength(1); // the run's call only: the direct run did not start

      await refuse(t, 'tool_returns', false); // space freed
      const ran = await api(t, 'POST', `/v1/agents/${id}/tools/lookup/run`, { args: {} });
      expect(ran.status).toBe(200);
      expect(ran.body).toMatchObject({ status: 'success', outcome: 'executed' });
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  /** Resolves once recovery was tried and refused (the database still refuses the run's end). */
  function recoveryRefused(t: TestApp): Promise<unknown> {
    const recovery = t.app.get(RunRecovery);
    const interrupt = recovery.interrupt.bind(recovery);
    let refused!: () => void;
    const once = new Promise<void>((r) => (refused = r));
    jest.spyOn(recovery, 'interrupt').mockImplementation(async (...args) => {
      try {
        return await interrupt(...args);
      } catch (e) {
        refused();
        throw e;
      }
    });
    // (bounded: before the fixes a failed write ended the run at once, and no recovery came)
    return Promise.race([once, new Promise((r) => setTimeout(r, 5000))]);
  }

  it('the database refuses a run’s end after all its messages were stored: nothing announces the end until it is stored, and recovery ends the run as it ended (completed, end_turn), not interrupted', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      await tools.declare(t, 'lookup');
      tools.handle('lookup', () => Promise.resolve({ body: 'found it' }));
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      const ends: any[] = [];
      const sub = t.app
        .get(RunEventsBus)
        .events$.subscribe((e) => e.type === 'run.completed' && ends.push(e));
      await refuse(t, 'run_ends', true);
      const refused = recoveryRefused(t);
      // (a memgpt agent's batch ends after a call that asks no heartbeat)
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
      let answered = false;
      const answer = api(t, 'POST', `/v1/agents/${id}/messages`, say('look it up')).then((r) => {
        answered = true;
        return r;
      });
      await refused;
      const [run] = (await api(t, 'GET', `/v1/runs/?agent_id=${id}`)).body as any[];
      // what the API says meanwhile is what is stored: the run has not ended
      expect(run.status).toBe('running');
      expect(answered).toBe(false);
      expect(ends.filter((e) => e.runId === run.id)).toEqual([]);

      await refuse(t, 'run_ends', false); // space freed
      await takesNextMessage(t, fake, id);
      const res = await answer;
      expect(res.status).toBe(200);
      expect(res.body.stop_reason.stop_reason).toBe('end_turn');
      expect(res.body.usage.step_count).toBe(1);
      expect(
        res.body.messages.find((m: any) => m.message_type === 'tool_return_message'),
      ).toMatchObject({ status: 'success', tool_return: 'found it' });
      expect((await api(t, 'GET', `/v1/runs/${run.id}`)).body).toMatchObject({
        status: 'completed',
        stop_reason: 'end_turn',
      });
      const announced = ends.filter((e) => e.runId === run.id);
      expect(announced.map((e) => [e.data.status, e.data.stop_reason])).toEqual([
        ['completed', 'end_turn'],
      ]);
      const msgs = (await api(t, 'GET', `/v1/runs/${run.id}/messages`)).body as any[];
      expect(msgs.filter((m) => m.message_type === 'tool_return_message')).toHaveLength(1);
      expect(tools.calls).toHaveLength(1);
      sub.unsubscribe();
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  it('the database refuses the end of a run that parked for consent: recovery parks it as it ended (requires_approval, the call not denied), and the approval then runs the call once', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      await tools.declare(t, 'pay', { safety: 'side_effecting' });
      tools.handle('pay', () => Promise.resolve({ body: 'paid' }));
      const id = await createAgent(t, fake, {
        tools: ['pay'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
        include_base_tools: false,
      });
      await refuse(t, 'run_ends', true);
      const refused = recoveryRefused(t);
      fake.push({ tool_calls: [{ id: 'call_pay', name: 'pay', arguments: { q: '10' } }] });
      const answer = api(t, 'POST', `/v1/agents/${id}/messages`, say('pay'));
      await refused;
      const [run] = (await api(t, 'GET', `/v1/runs/?agent_id=${id}`)).body as any[];
      expect(run.status).toBe('running');

      await refuse(t, 'run_ends', false);
      // the lease keeper's next sweep takes the agent and recovers it (a message would wait behind the
      // batch, which is parked once recovered)
      const res = await answer;
      expect(res.body.stop_reason.stop_reason).toBe('requires_approval');
      expect(res.body.messages.at(-1)).toMatchObject({
        message_type: 'approval_request_message',
        tool_call: { tool_call_id: 'call_pay' },
      });
      expect((await api(t, 'GET', `/v1/runs/${run.id}`)).body).toMatchObject({
        status: 'completed',
        stop_reason: 'requires_approval',
      });
      const requests = (await api(t, 'GET', `/v1/consent/requests?status=all&agent_id=${id}`))
        .body as any[];
      expect(requests.map((r) => r.status)).toEqual(['pending']);
      const busy = await api(t, 'POST', `/v1/agents/${id}/messages`, say('and then?'));
      expect(busy.body.code).toBe('PENDING_APPROVAL');

      fake.push({ content: 'paid' });
      const approved = await api(t, 'POST', `/v1/agents/${id}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: 'call_pay', approve: true }],
          },
        ],
      });
      expect(approved.status).toBe(200);
      expect(
        approved.body.messages.find((m: any) => m.message_type === 'tool_return_message'),
      ).toMatchObject({ tool_call_id: 'call_pay', status: 'success' });
      expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_pay']);
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  /**
   * The run `act` starts (or cancels: it answers the run's id) cannot store its end: the repository's write
   * fails, every time, so the recovery that follows is refused too and the run is left `running`. Then the
   * app stops; answers a new one on the same database (a restart, or another instance): all it knows of the
   * run is what is stored.
   */
  async function endNotStoredThenRestart(t: TestApp, act: () => Promise<string>): Promise<TestApp> {
    jest
      .spyOn(t.app.get(ProcessingRepository), 'finishRun')
      .mockRejectedValue(new Error('database or disk is full'));
    const refused = recoveryRefused(t);
    const run = await act();
    await refused;
    expect((await api(t, 'GET', `/v1/runs/${run}`)).body.status).toBe('running');
    jest.restoreAllMocks();
    await t.close();
    return startApp({ dir: t.dir, modelBaseUrl: fake.baseUrl });
  }

  it('a run’s end cannot be stored and its process stops before it could be: the next process on the database recovers the run as it ended (completed, end_turn), not interrupted', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    try {
      await tools.declare(t, 'lookup');
      tools.handle('lookup', () => ({ body: 'found it' }));
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      // (a memgpt agent's batch ends after a call that asks no heartbeat)
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
      let run!: string;
      t = await endNotStoredThenRestart(t, async () => {
        run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up'))).body.id;
        return run;
      });
      expect(await runEnded(t, run)).toMatchObject({
        status: 'completed',
        stop_reason: 'end_turn',
        error: null,
      });
      expect((await api(t, 'GET', `/v1/runs/${run}/usage`)).body).toMatchObject({ step_count: 1 });
      const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
      expect(
        msgs
          .filter((m) => m.message_type === 'tool_return_message')
          .map((m) => [m.status, m.tool_return]),
      ).toEqual([['success', 'found it']]);
      expect(tools.calls).toHaveLength(1);
      await takesNextMessage(t, fake, id);
    } finally {
      jest.restoreAllMocks();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a user cancels a run running here, its end cannot be stored and its process stops: the next process ends it cancelled, what the cancel answered', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    try {
      await tools.declare(t, 'lookup');
      let started!: () => void;
      const toolStarted = new Promise<void>((r) => (started = r));
      tools.handle('lookup', async (_call, hungUp) => {
        started();
        await hungUp;
        return { body: 'never' };
      });
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] });
      const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look it up'))).body
        .id as string;
      await toolStarted;
      t = await endNotStoredThenRestart(t, async () => {
        const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {
          run_ids: [run],
        });
        expect(cancel.body).toEqual({ [run]: 'cancelled' });
        return run;
      });
      expect(await runEnded(t, run)).toMatchObject({
        status: 'cancelled',
        stop_reason: 'cancelled',
      });
      expect(tools.calls).toHaveLength(1);
    } finally {
      jest.restoreAllMocks();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a run that parked for consent cannot store its end and its process stops: the next process parks it as it ended (requires_approval, the request still pending), and the approval runs the call once', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    try {
      await tools.declare(t, 'pay', { safety: 'side_effecting' });
      tools.handle('pay', () => ({ body: 'paid' }));
      const id = await createAgent(t, fake, {
        tools: ['pay'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
        include_base_tools: false,
      });
      fake.push({ tool_calls: [{ id: 'call_pay', name: 'pay', arguments: { q: '10' } }] });
      let run!: string;
      t = await endNotStoredThenRestart(t, async () => {
        run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('pay'))).body.id;
        return run;
      });
      expect(await runEnded(t, run)).toMatchObject({
        status: 'completed',
        stop_reason: 'requires_approval',
      });
      const requests = (await api(t, 'GET', `/v1/consent/requests?status=all&agent_id=${id}`))
        .body as any[];
      expect(requests.map((r) => r.status)).toEqual(['pending']);
      expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval).toMatchObject({
        message_type: 'approval_request_message',
        tool_call: { tool_call_id: 'call_pay' },
      });
      expect((await api(t, 'POST', `/v1/agents/${id}/messages`, say('and then?'))).body.code).toBe(
        'PENDING_APPROVAL',
      );

      fake.push({ content: 'paid' });
      const approved = await api(t, 'POST', `/v1/agents/${id}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: 'call_pay', approve: true }],
          },
        ],
      });
      expect(approved.body.stop_reason.stop_reason).toBe('end_turn');
      expect(
        approved.body.messages.find((m: any) => m.message_type === 'tool_return_message'),
      ).toMatchObject({ tool_call_id: 'call_pay', status: 'success', tool_return: 'paid' });
      expect(tools.calls.map((c) => c.tool_call_id)).toEqual(['call_pay']);
    } finally {
      jest.restoreAllMocks();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /**
   * Read-only `fast` and `slow` run together, `after` (side-effecting) comes after them in the turn; `fast`
   * answers once `slow` has started (and `fastAnswers`, when given, resolved). `stopped` resolves when
   * `slow` is told to stop (its request hung up), or with false if that has not come in a while (a bounded
   * wait: only before the fix).
   */
  async function callsBeside(
    t: TestApp,
    fastAnswers: Promise<void> = Promise.resolve(),
  ): Promise<{
    id: string;
    slowStarted: Promise<void>;
    stopped: () => Promise<boolean>;
    release: () => void;
  }> {
    await tools.declare(t, 'fast');
    await tools.declare(t, 'slow');
    await tools.declare(t, 'after', { safety: 'side_effecting' });
    const id = await createAgent(t, fake, {
      tools: ['fast', 'slow', 'after'],
      include_base_tools: false,
    });
    let started!: () => void;
    const slowStarted = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let hungUp!: Promise<void>;
    tools.handle('slow', async (_call, h) => {
      hungUp = h;
      started();
      await Promise.race([released, h]);
      return { body: 'slow done' };
    });
    tools.handle('fast', async () => {
      await slowStarted;
      await fastAnswers;
      return { body: 'fast done' };
    });
    fake.push({
      tool_calls: [
        { id: 'call_fast', name: 'fast', arguments: {} },
        { id: 'call_slow', name: 'slow', arguments: {} },
        { id: 'call_after', name: 'after', arguments: {} },
      ],
    });
    const stopped = () =>
      Promise.race([
        hungUp.then(() => true),
        new Promise<boolean>((r) => setTimeout(() => r(false), 2000)),
      ]);
    return { id, slowStarted, stopped, release };
  }

  /**
   * After the run of `callsBeside` was given up and recovered: `slow`, still running then, was told to stop;
   * each call has one return, recovery's; `after` never started; the agent's next message runs.
   */
  async function toldToStopAndRecovered(
    t: TestApp,
    id: string,
    run: string,
    beside: { stopped: () => Promise<boolean>; release: () => void },
  ): Promise<void> {
    expect(await beside.stopped()).toBe(true);
    beside.release();
    await takesNextMessage(t, fake, id);
    const msgs = (await api(t, 'GET', `/v1/runs/${run}/messages`)).body as any[];
    expect(
      msgs
        .filter((m) => m.message_type === 'tool_return_message')
        .map((m) => [m.tool_call_id, m.tool_return]),
    ).toEqual([
      ['call_fast', OUTCOME_UNKNOWN],
      ['call_slow', OUTCOME_UNKNOWN],
      ['call_after', NOT_STARTED],
    ]);
    expect(tools.calls.map((c) => c.name).sort()).toEqual(['fast', 'slow']);
  }

  it('the return of a read-only call cannot be stored while another read-only call of its turn still runs: that tool is told to stop, its return is never stored, the turn’s next call never starts; recovery gives each its return', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      const beside = await callsBeside(t);
      const { id } = beside;
      // fast's return is refused every time it is tried (a full disk), then writes pass again
      const repo = t.app.get(ProcessingRepository);
      const append = repo.append.bind(repo);
      let refused = 0;
      jest.spyOn(repo, 'append').mockImplementation((agentId, rows, ...rest) => {
        if (refused < 3 && rows.some((r) => r.payload.tool_call_id === 'call_fast')) {
          refused++;
          return Promise.reject(new Error('database or disk is full'));
        }
        return append(agentId, rows, ...rest);
      });
      const run = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('look around'))).body
        .id as string;
      expect(await runEnded(t, run)).toMatchObject({ status: 'failed', error: 'interrupted' });
      await toldToStopAndRecovered(t, id, run, beside);
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  it('a tool’s return is refused once (a dropped connection): it is written again and the call keeps its real result', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      await tools.declare(t, 'lookup');
      tools.handle('lookup', () => Promise.resolve({ body: 'found it' }));
      const id = await createAgent(t, fake, { tools: ['lookup'], include_base_tools: false });
      const repo = t.app.get(ProcessingRepository);
      const append = repo.append.bind(repo);
      let refused = 0;
      jest.spyOn(repo, 'append').mockImplementation((agentId, rows, ...rest) => {
        if (refused === 0 && rows.some((r) => r.message_type === 'tool_return_message')) {
          refused++;
          return Promise.reject(new Error('Connection terminated unexpectedly'));
        }
        return append(agentId, rows, ...rest);
      });
      fake.push({ tool_calls: [{ name: 'lookup', arguments: {} }] }, { content: 'done' });
      const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('look it up'));
      expect(refused).toBe(1);
      expect(res.body.stop_reason.stop_reason).toBe('end_turn');
      const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
      expect(ret).toMatchObject({ status: 'success', tool_return: 'found it' });
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  /**
   * An agent with `deploy` and `notify` under these rules, whose model calls both in one turn, which parks;
   * answers the agent and how many model calls were made.
   */
  async function parkDeployAndNotify(
    t: TestApp,
    tool_rules: unknown[],
  ): Promise<{ id: string; modelCalls: number }> {
    await tools.declare(t, 'deploy', { safety: 'side_effecting' });
    await tools.declare(t, 'notify', { safety: 'side_effecting' });
    const id = await createAgent(t, fake, {
      tools: ['deploy', 'notify'],
      include_base_tools: false,
      tool_rules,
    });
    fake.push({
      tool_calls: [
        { id: 'call_deploy', name: 'deploy', arguments: {} },
        { id: 'call_notify', name: 'notify', arguments: {} },
      ],
    });
    const parked = (await api(t, 'POST', `/v1/agents/${id}/messages`, say('deploy'))).body;
    expect(parked.stop_reason.stop_reason).toBe('requires_approval');
    return { id, modelCalls: fake.requests.length };
  }

  /** The run that continues a parked (or recovered) run, once it is stored. */
  async function continuationOf(t: TestApp, runId: string): Promise<string> {
    const repo = t.app.get(ProcessingRepository);
    for (;;) {
      const next = (await repo.findRunById(runId))?.continued_by;
      if (next) return next;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  it('an approval’s continuation cannot store anything (the database drops it) before the approved exit_loop call starts, with a call of its turn held behind it: after recovery the approved call runs once and its exit_loop rule ends the batch; the model is not called again', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      const { id, modelCalls } = await parkDeployAndNotify(t, [
        { type: 'requires_approval', tool_name: 'deploy' },
        { type: 'exit_loop', tool_name: 'deploy' },
        { type: 'constrain_child_tools', tool_name: 'deploy', children: ['notify'] },
      ]);
      // the continuation's first write (the approval) is refused every time it is tried
      const repo = t.app.get(ProcessingRepository);
      const append = repo.append.bind(repo);
      let refused = 0;
      jest.spyOn(repo, 'append').mockImplementation((agentId, rows, ...rest) => {
        if (refused < 3 && rows.some((r) => r.message_type === 'approval_response_message')) {
          refused++;
          return Promise.reject(new Error('Connection terminated unexpectedly'));
        }
        return append(agentId, rows, ...rest);
      });
      fake.push({ content: 'the model is not asked again' });
      const cont = (
        await api(t, 'POST', `/v1/agents/${id}/messages/async`, {
          messages: [
            {
              type: 'approval',
              approvals: [{ type: 'approval', tool_call_id: 'call_deploy', approve: true }],
            },
          ],
        })
      ).body.id as string;
      expect(await runEnded(t, cont)).toMatchObject({ status: 'failed', error: 'interrupted' });
      expect(await runEnded(t, await continuationOf(t, cont))).toMatchObject({
        status: 'completed',
        stop_reason: 'tool_rule',
      });
      expect(tools.calls.map((c) => c.name)).toEqual(['deploy']);
      expect(fake.requests).toHaveLength(modelCalls);
      const msgs = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`))
        .body as any[];
      expect(
        msgs
          .filter((m) => m.message_type === 'tool_return_message')
          .map((m) => [m.tool_call_id, m.status]),
      ).toEqual([
        ['call_notify', 'error'],
        ['call_deploy', 'success'],
      ]);
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  it('two approved calls of a turn, the first an exit_loop one: the connection drops as its return is stored, so the second is carried to a new continuation after recovery; the batch then ends by the exit_loop rule, the model is not called again', async () => {
    const t = await startApp({ modelBaseUrl: fake.baseUrl });
    try {
      const { id, modelCalls } = await parkDeployAndNotify(t, [
        { type: 'requires_approval', tool_name: 'deploy' },
        { type: 'requires_approval', tool_name: 'notify' },
        { type: 'exit_loop', tool_name: 'deploy' },
      ]);
      // deploy's return is stored, but the connection drops before the database says so
      const repo = t.app.get(ProcessingRepository);
      const append = repo.append.bind(repo);
      let dropped = 0;
      jest.spyOn(repo, 'append').mockImplementation(async (agentId, rows, ...rest) => {
        if (dropped < 3 && rows.some((r) => r.payload.tool_call_id === 'call_deploy')) {
          if (dropped++ === 0) await append(agentId, rows, ...rest);
          throw new Error('Connection terminated unexpectedly');
        }
        return append(agentId, rows, ...rest);
      });
      fake.push({ content: 'the model is not asked again' });
      const cont = (
        await api(t, 'POST', `/v1/agents/${id}/messages/async`, {
          messages: [
            {
              type: 'approval',
              approvals: ['call_deploy', 'call_notify'].map((tool_call_id) => ({
                type: 'approval',
                tool_call_id,
                approve: true,
              })),
            },
          ],
        })
      ).body.id as string;
      expect(await runEnded(t, cont)).toMatchObject({ status: 'failed', error: 'interrupted' });
      expect(await runEnded(t, await continuationOf(t, cont))).toMatchObject({
        status: 'completed',
        stop_reason: 'tool_rule',
      });
      expect(tools.calls.map((c) => c.name)).toEqual(['deploy', 'notify']);
      expect(fake.requests).toHaveLength(modelCalls);
    } finally {
      jest.restoreAllMocks();
      await t.close();
    }
  });

  /** A client tool (Letta's client_tools) with an exit_loop rule; the agent declares its name. */
  const BASH = {
    name: 'Bash',
    description: 'Runs a shell command on the client',
    parameters: { type: 'object', properties: { command: { type: 'string' } } },
  };
  const clientAnswer = (more: unknown[] = []) => ({
    messages: [
      {
        type: 'approval',
        approvals: [
          { type: 'tool', tool_call_id: 'call_bash', tool_return: 'a.txt', status: 'success' },
          ...more,
        ],
      },
    ],
    client_tools: [BASH],
  });

  /** An agent whose model calls `Bash` on the client (and the other tools named) in one turn, which parks. */
  async function parkOnClient(t: TestApp, also: string[], tool_rules: unknown[]): Promise<string> {
    const id = await createAgent(t, fake, {
      tools: also,
      include_base_tools: false,
      client_tools: ['Bash'],
      tool_rules: [{ type: 'exit_loop', tool_name: 'Bash' }, ...tool_rules],
    });
    fake.push({
      tool_calls: [
        { id: 'call_bash', name: 'Bash', arguments: { command: 'ls' } },
        ...also.map((name) => ({ id: `call_${name}`, name, arguments: {} })),
      ],
    });
    const parked = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('go', { client_tools: [BASH] }),
    );
    expect(parked.body.stop_reason.stop_reason).toBe('requires_approval');
    return id;
  }

  it.each([
    ['alone', false],
    ['with an approval for a call of its turn, which then runs once', true],
  ])(
    'the client answers its exit_loop tool (%s), and the continuation cannot store anything: the client’s result is kept (not "outcome unknown") and the exit_loop rule ends the batch; the model is not called again',
    async (_case, withDeploy) => {
      const t = await startApp({ modelBaseUrl: fake.baseUrl });
      try {
        if (withDeploy) await tools.declare(t, 'deploy', { safety: 'side_effecting' });
        const id = await parkOnClient(
          t,
          withDeploy ? ['deploy'] : [],
          withDeploy ? [{ type: 'requires_approval', tool_name: 'deploy' }] : [],
        );
        const modelCalls = fake.requests.length;
        // the continuation's first write (the approval response) is refused every time it is tried
        const repo = t.app.get(ProcessingRepository);
        const append = repo.append.bind(repo);
        let refused = 0;
        jest.spyOn(repo, 'append').mockImplementation((agentId, rows, ...rest) => {
          if (refused < 3 && rows.some((r) => r.message_type === 'approval_response_message')) {
            refused++;
            return Promise.reject(new Error('Connection terminated unexpectedly'));
          }
          return append(agentId, rows, ...rest);
        });
        fake.push({ content: 'the model is not asked again' });
        const approvals = withDeploy
          ? [{ type: 'approval', tool_call_id: 'call_deploy', approve: true }]
          : [];
        const cont = (
          await api(t, 'POST', `/v1/agents/${id}/messages/async`, clientAnswer(approvals))
        ).body.id as string;
        expect(await runEnded(t, cont)).toMatchObject({ status: 'failed', error: 'interrupted' });
        expect(await runEnded(t, await continuationOf(t, cont))).toMatchObject({
          status: 'completed',
          stop_reason: 'tool_rule',
        });
        expect(fake.requests).toHaveLength(modelCalls);
        expect(tools.calls.map((c) => c.name)).toEqual(withDeploy ? ['deploy'] : []);
        const msgs = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=50`))
          .body as any[];
        expect(
          msgs
            .filter((m) => m.message_type === 'tool_return_message')
            .map((m) => [m.tool_call_id, m.status, m.tool_return]),
        ).toEqual([
          ['call_bash', 'success', 'a.txt'],
          ...(withDeploy ? [['call_deploy', 'success', 'ok:deploy']] : []),
        ]);
        await takesNextMessage(t, fake, id);
      } finally {
        jest.restoreAllMocks();
        await t.close();
      }
    },
  );

  it('the client answers its exit_loop tool; the continuation stores the result but not its end, and its process stops: the next process ends the batch by the exit_loop rule (completed, tool_rule), not interrupted', async () => {
    let t = await startApp({ keepDir: true, modelBaseUrl: fake.baseUrl });
    const dir = t.dir;
    try {
      const id = await parkOnClient(t, [], []);
      const modelCalls = fake.requests.length;
      let cont!: string;
      t = await endNotStoredThenRestart(t, async () => {
        cont = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, clientAnswer())).body.id;
        return cont;
      });
      expect(await runEnded(t, cont)).toMatchObject({
        status: 'completed',
        stop_reason: 'tool_rule',
      });
      expect(fake.requests).toHaveLength(modelCalls);
      const msgs = (await api(t, 'GET', `/v1/runs/${cont}/messages`)).body as any[];
      expect(
        msgs
          .filter((m) => m.message_type === 'tool_return_message')
          .map((m) => [m.tool_call_id, m.tool_return]),
      ).toEqual([['call_bash', 'a.txt']]);
      await takesNextMessage(t, fake, id);
    } finally {
      jest.restoreAllMocks();
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('shutdown: a run stuck in a tool past the grace period is interrupted; queued runs wait for the next boot', async () => {
    let t = await startApp({
      keepDir: true,
      modelBaseUrl: fake.baseUrl,
      overrides: { processing: { shutdown_grace_seconds: 0 } },
    });
    const dir = t.dir;
    await tools.declare(t, 'slow');
    const id = await createAgent(t, fake, { tools: ['slow'], include_base_tools: false });
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('slow', async (_c, hungUp) => {
      started();
      await hungUp;
      return { body: 'late' };
    });
    fake.push({ tool_calls: [{ name: 'slow', arguments: {} }] });
    const running = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('one'))).body.id;
    await toolStarted;
    const waiting = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('two'))).body.id;
    const syncWaiting = fetch(`${t.baseUrl}/v1/agents/${id}/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(say('three')),
    });
    while ((await api(t, 'GET', `/v1/runs/?agent_id=${id}`)).body.length < 3) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await t.close();
    // a caller waiting on a run that could not start is told, and its run stays queued
    const answered = await syncWaiting;
    expect(answered.status).toBe(503);
    // the run is stored: Letta's SDK must not send it again (it retries a 5xx unless told not to)
    expect(answered.headers.get('x-should-retry')).toBe('false');
    const body = (await answered.json()) as any;
    expect(body.code).toBe('SHUTTING_DOWN');
    const third = body.details.run_id as string;

    fake.push({ content: 'two done' }, { content: 'three done' });
    t = await startApp({ dir, modelBaseUrl: fake.baseUrl });
    try {
      const r1 = (await api(t, 'GET', `/v1/runs/${running}`)).body;
      expect(r1).toMatchObject({ status: 'failed', stop_reason: 'error', error: 'interrupted' });
      const msgs = (await api(t, 'GET', `/v1/runs/${running}/messages`)).body;
      expect(msgs.at(-1)).toMatchObject({ message_type: 'tool_return_message', status: 'error' });
      const r2 = await runEnded(t, waiting);
      expect(r2).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      const r3 = await runEnded(t, third);
      expect(r3).toMatchObject({ status: 'completed', stop_reason: 'end_turn' });
      expect(r3.created_at >= r2.created_at).toBe(true);
      expect(tools.calls.filter((c) => c.name === 'slow')).toHaveLength(1);
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('SIGTERM: the server stops and exits 0', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-server-sigterm-'));
    const server = spawnServer({
      env: {
        SQLITE_PATH: path.join(dir, 'db.sqlite'),
        AGENTS_DIR: path.join(dir, 'agents'),
        TOOLS_DIR: path.join(dir, 'tools'),
        LOG_LEVEL: 'info',
      },
    });
    try {
      const health = await fetch(`${await server.listening}/v1/health`);
      expect(health.status).toBe(200);
      expect(await server.kill('SIGTERM')).toBe(0);
    } finally {
      await server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60000);
});
