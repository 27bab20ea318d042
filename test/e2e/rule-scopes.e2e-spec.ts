/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  runEnded,
  say,
  startLoopEnv,
  ToolServer,
} from '../support/processing-fixtures';
import { fakeClock } from './consent-helpers';

/** The tools of this suite: http tools on the test's tool server (read_only unless said). */
const TOOLS: (string | [string, Record<string, unknown>])[] = [
  'lookup',
  'status',
  'init',
  'run_tests',
  'deploy',
  'open_tx',
  'commit',
  ['charge_card', { safety: 'side_effecting' }],
  ['send_invoice', { safety: 'side_effecting' }],
  ['pay', { safety: 'side_effecting' }],
  ['ping', { safety: 'side_effecting' }],
  ['slow', { safety: 'side_effecting' }],
];

/**
 * The tool rules of issue 3 and the seed design (003), each in its scope, as a user drives them: agents
 * created over REST, user messages sent over REST, the fake model making the calls, real http tools
 * ("the tool ran" = its server got the request). The core's scenario tables prove the same rules without
 * the database, the processor and the HTTP layer; these rows prove that the product keeps them end to end.
 */
describe('tool rules in their scopes, end to end', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv(TOOLS);
    ({ t, fake, tools } = env);
  });
  afterAll(() => env.close());
  beforeEach(() => {
    env.reset();
    // every tool answers "ok:<name>" again (a test's own handler does not reach the next test)
    for (const name of TOOLS.map((x) => (typeof x === 'string' ? x : x[0])))
      tools.handle(name, () => ({ body: `ok:${name}` }));
  });

  const agent = (toolNames: string[], rules: unknown[] = [], over: Record<string, unknown> = {}) =>
    createAgent(t, fake, {
      tools: toolNames,
      tool_rules: rules,
      include_base_tools: false,
      ...over,
    });
  const send = async (agentId: string, text = 'go') => {
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say(text));
    expect(res.status).toBe(200);
    return res.body;
  };
  const returns = (body: any) =>
    body.messages.filter((m: any) => m.message_type === 'tool_return_message');
  const ran = () => tools.calls.map((c) => c.name);
  const call = (name: string, args: Record<string, unknown> = {}, id?: string) => ({
    name,
    arguments: args,
    ...(id ? { id } : {}),
  });

  describe('exclusive_group (per batch)', () => {
    const rules = [{ type: 'exclusive_group', tools: ['charge_card', 'send_invoice'] }];

    it('the first tool used claims the group: the other is refused for the rest of the batch, heartbeats included; a new batch starts unclaimed', async () => {
      const id = await agent(['charge_card', 'send_invoice', 'lookup'], rules);
      fake.push(
        {
          tool_calls: [
            call('charge_card', { q: 'A-1' }),
            call('send_invoice', { q: 'A-1', request_heartbeat: true }),
          ],
        },
        // the refused call is a self-correction: same pass; then a heartbeat starts a new pass
        { tool_calls: [call('lookup', { q: 'x', request_heartbeat: true })] },
        { tool_calls: [call('send_invoice', { q: 'A-2' })] },
        { content: 'done' },
      );
      const first = await send(id);
      expect(first.stop_reason.stop_reason).toBe('end_turn');
      const r = returns(first);
      expect(r.map((m: any) => m.status)).toEqual(['success', 'error', 'success', 'error']);
      expect(r[1].tool_return).toMatch(/^\[ToolRuleViolation\] .*send_invoice.*charge_card/);
      expect(r[3].tool_return).toMatch(/^\[ToolRuleViolation\] .*send_invoice.*charge_card/);
      expect(ran()).toEqual(['charge_card', 'lookup']);

      // a new batch: the group is free again, and this time send_invoice claims it
      fake.push({
        tool_calls: [call('send_invoice', { q: 'B-1' }), call('charge_card', { q: 'B-1' })],
      });
      const second = await send(id, 'again');
      expect(returns(second).map((m: any) => m.status)).toEqual(['success', 'error']);
      expect(ran()).toEqual(['charge_card', 'lookup', 'send_invoice']);
    });

    it('a refused call claims nothing: a tool refused by another rule leaves the group to the other tool', async () => {
      const id = await agent(
        ['charge_card', 'send_invoice', 'lookup'],
        [
          ...rules,
          { type: 'requires_preceding_tools', tool_name: 'charge_card', tools: ['lookup'] },
        ],
      );
      fake.push(
        { tool_calls: [call('charge_card', { q: '1' }), call('send_invoice', { q: '1' })] },
        { content: 'done' },
      );
      const res = await send(id);
      expect(returns(res).map((m: any) => m.status)).toEqual(['error', 'success']);
      expect(ran()).toEqual(['send_invoice']);
    });
  });

  describe('max_count_per_step (per batch)', () => {
    it('the alias max_calls: failed executions count toward the limit, refused ones do not', async () => {
      const id = await agent(
        ['pay', 'lookup'],
        [
          { type: 'max_calls', tool_name: 'pay', max_count_limit: 2 },
          { type: 'requires_preceding_tools', tool_name: 'pay', tools: ['lookup'] },
        ],
      );
      let n = 0;
      tools.handle('pay', () =>
        ++n === 1 ? { status: 500, body: 'card declined' } : { body: 'paid' },
      );
      fake.push(
        {
          tool_calls: [
            call('pay', { q: 'refused: no lookup yet' }),
            call('lookup', { q: 'x' }),
            call('pay', { q: 'fails' }),
            call('pay', { q: 'succeeds' }),
            call('pay', { q: 'over the limit' }),
          ],
        },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r.map((m: any) => m.status)).toEqual([
        'error',
        'success',
        'error',
        'success',
        'error',
      ]);
      expect(r[0].tool_return).toMatch(/^\[ToolRuleViolation\] pay requires lookup/);
      expect(r[2].tool_return).toContain('card declined');
      expect(r[4].tool_return).toMatch(/^\[ToolRuleViolation\] pay reached its limit of 2 calls/);
      expect(ran()).toEqual(['lookup', 'pay', 'pay']);
    });
  });

  describe('the batch and its heartbeats', () => {
    it("a heartbeat continuation goes ahead of a user message that arrived meanwhile: the batch's counters still hold in it, and the new message starts a fresh batch", async () => {
      const id = await agent(
        ['pay', 'lookup'],
        [{ type: 'max_count_per_step', tool_name: 'pay', max_count_limit: 1 }],
        { tool_executor: { dedupe_window_seconds: 0 } },
      );
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let arrived!: () => void;
      const payStarted = new Promise<void>((r) => (arrived = r));
      tools.handle('pay', async () => {
        arrived();
        await held;
        return { body: 'paid' };
      });
      fake.respond((req) => {
        const last = req.messages.at(-1);
        const text = typeof last?.content === 'string' ? last.content : '';
        if (last?.role === 'user' && text === 'first')
          return { tool_calls: [call('pay', { q: '1', request_heartbeat: true })] };
        if (last?.role === 'user' && text.includes('"heartbeat"'))
          return { tool_calls: [call('pay', { q: '2' })] };
        if (last?.role === 'user' && text === 'second')
          return { tool_calls: [call('pay', { q: '3' })] };
        return { content: 'done' };
      });
      const first = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('first'));
      expect(first.status).toBe(202);
      await payStarted;
      const second = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('second'));
      expect(second.status).toBe(202);
      release();
      await runEnded(t, first.body.id);
      await runEnded(t, second.body.id);
      // the heartbeat pass (pay 2, refused: the batch's one pay was used) came before "second"
      const lastUser = fake.requests.map((r) => {
        const m = r.messages.at(-1);
        return m.role === 'user' && String(m.content).includes('"heartbeat"')
          ? 'heartbeat'
          : m.content;
      });
      expect(lastUser.indexOf('heartbeat')).toBeLessThan(lastUser.indexOf('second'));
      expect(tools.calls.map((c) => c.arguments.q)).toEqual(['1', '3']);
    });
  });

  describe('pass rules', () => {
    it('requires_preceding_tools: refused with the rule and what is allowed now; after the prerequisite it runs; a heartbeat (new pass) asks for it again', async () => {
      const id = await agent(
        ['run_tests', 'deploy', 'status'],
        [{ type: 'requires_preceding_tools', tool_name: 'deploy', tools: ['run_tests'] }],
      );
      fake.push(
        { tool_calls: [call('deploy', { q: 'prod' })] },
        { tool_calls: [call('run_tests'), call('deploy', { q: 'prod', request_heartbeat: true })] },
        { tool_calls: [call('deploy', { q: 'staging' })] },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r.map((m: any) => m.status)).toEqual(['error', 'success', 'success', 'error']);
      expect(r[0].tool_return).toBe(
        '[ToolRuleViolation] deploy requires run_tests earlier in this pass; allowed now: run_tests, status',
      );
      expect(r[3].tool_return).toMatch(
        /^\[ToolRuleViolation\] deploy requires run_tests earlier in this pass/,
      );
      expect(ran()).toEqual(['run_tests', 'deploy']);
      // prevention: the model is not offered deploy until run_tests ran in the pass
      expect(fake.requests[0].toolNames.sort()).toEqual(['run_tests', 'status']);
      expect(fake.requests[2].toolNames.sort()).toEqual(['run_tests', 'status']);
    });

    it('requires_following_tools: refused once a following tool ran; once it ran, the batch cannot end before them', async () => {
      const id = await agent(
        ['open_tx', 'commit', 'status'],
        [
          { type: 'requires_following_tools', tool_name: 'open_tx', tools: ['commit'] },
          // the loop goes on after commit in the same pass (a heartbeat would start a new one)
          { type: 'continue_loop', tool_name: 'commit' },
        ],
      );
      fake.push(
        { tool_calls: [call('open_tx', { q: '1' })] },
        { content: 'all done' }, // too early: commit has not run
        { tool_calls: [call('commit', { q: '1' })] },
        { tool_calls: [call('open_tx', { q: '2' })] }, // commit already ran in this pass
        { content: 'done' },
      );
      const res = await send(id);
      expect(res.stop_reason.stop_reason).toBe('end_turn');
      const r = returns(res);
      expect(r.map((m: any) => m.status)).toEqual(['success', 'success', 'error']);
      expect(r[2].tool_return).toMatch(/^\[ToolRuleViolation\] .*open_tx.*commit/);
      expect(ran()).toEqual(['open_tx', 'commit']);
      // the model was reminded of commit before the batch could end
      expect(JSON.stringify(fake.requests[2].messages)).toContain('commit');
    });

    describe('conditional', () => {
      const rule = (over: Record<string, unknown> = {}) => ({
        type: 'conditional',
        tool_name: 'status',
        child_output_mapping: { green: 'deploy', red: 'run_tests' },
        ...over,
      });
      const statusSays = (text: string) => tools.handle('status', () => ({ body: text }));

      it('the output picks the next tool: it alone is offered and forced, another is refused', async () => {
        const id = await agent(['status', 'deploy', 'run_tests'], [rule()]);
        statusSays('red');
        fake.push(
          { tool_calls: [call('status')] },
          { tool_calls: [call('deploy', { q: 'prod' })] },
          { tool_calls: [call('run_tests')] },
        );
        const res = await send(id);
        expect(fake.requests[1].toolNames).toEqual(['run_tests']);
        expect(fake.requests[1].tool_choice).toEqual({
          type: 'function',
          function: { name: 'run_tests' },
        });
        const r = returns(res);
        expect(r.map((m: any) => m.status)).toEqual(['success', 'error', 'success']);
        expect(r[1].tool_return).toMatch(/^\[ToolRuleViolation\] .*status.*run_tests/);
        expect(ran()).toEqual(['status', 'run_tests']);
      });

      it('an output no key maps goes to default_child', async () => {
        const id = await agent(
          ['status', 'deploy', 'run_tests', 'lookup'],
          [rule({ default_child: 'lookup' })],
        );
        statusSays('amber');
        fake.push({ tool_calls: [call('status')] }, { tool_calls: [call('lookup', { q: 'why' })] });
        await send(id);
        expect(fake.requests[1].toolNames).toEqual(['lookup']);
        expect(ran()).toEqual(['status', 'lookup']);
      });

      it('with require_output_mapping and no match, no tool may run next: the model is offered none', async () => {
        const id = await agent(
          ['status', 'deploy', 'run_tests'],
          // the loop goes on in the same pass after status (a heartbeat would start a new pass)
          [rule({ require_output_mapping: true }), { type: 'continue_loop', tool_name: 'status' }],
        );
        statusSays('amber');
        fake.push(
          { tool_calls: [call('status', { q: 'x' })] },
          { tool_calls: [call('deploy', { q: 'anyway' })] },
          { content: 'stopping' },
        );
        const res = await send(id);
        expect(fake.requests[1].toolNames).toEqual([]);
        expect(ran()).toEqual(['status']);
        // a model that calls a tool anyway is refused
        expect(returns(res)[1]).toMatchObject({ status: 'error' });
        expect(returns(res)[1].tool_return).toMatch(
          /^\[ToolRuleViolation\] the output of status matches no mapping/,
        );
      });
    });

    it('an agent that simply has one tool is offered it without forcing it', async () => {
      const id = await agent(['lookup']);
      fake.push({ content: 'no tool needed' });
      await send(id);
      expect(fake.requests[0].toolNames).toEqual(['lookup']);
      expect(fake.requests[0].tool_choice).toBe('auto');
    });

    it.each(['run_first', 'start_constraint'])(
      '%s: only the start tool runs until it did, with the rule’s args over the model’s',
      async (type) => {
        const id = await agent(
          ['init', 'lookup'],
          [{ type, tool_name: 'init', args: { q: 'prefilled' } }],
        );
        fake.push(
          { tool_calls: [call('lookup', { q: 'early' }), call('init', { q: 'from the model' })] },
          { tool_calls: [call('lookup', { q: 'late' })] },
          { content: 'done' },
        );
        const res = await send(id);
        const r = returns(res);
        expect(r.map((m: any) => m.status)).toEqual(['error', 'success', 'success']);
        expect(r[0].tool_return).toMatch(/^\[ToolRuleViolation\] .*init/);
        expect(tools.calls.map((c) => [c.name, c.arguments])).toEqual([
          ['init', { q: 'prefilled' }],
          ['lookup', { q: 'late' }],
        ]);
      },
    );
  });

  describe('dedupe (persistent)', () => {
    it('side_effecting tools are deduped across batches by default; read_only tools are not', async () => {
      const id = await agent(['pay', 'lookup']);
      for (const text of ['first', 'second']) {
        fake.push({ tool_calls: [call('pay', { q: 'A-1' }), call('lookup', { q: 'A-1' })] });
        await send(id, text);
      }
      expect(ran()).toEqual(['pay', 'lookup', 'lookup']);
      fake.push({ tool_calls: [call('pay', { q: 'A-1' })] });
      const third = await send(id, 'third');
      expect(returns(third)[0].tool_return).toMatch(
        /^\[ToolDeduplicated\] pay already ran with these arguments \d+s ago \(dedupe window 300s\)/,
      );
    });

    it('identical means the same canonical arguments: key order and request_heartbeat do not make a new call', async () => {
      const id = await agent(['pay']);
      fake.push(
        { tool_calls: [call('pay', { q: 'A-1', amount: 5, request_heartbeat: true })] },
        { tool_calls: [call('pay', { amount: 5, q: 'A-1', request_heartbeat: true })] },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r[1].tool_return).toMatch(/^\[ToolDeduplicated\]/);
      expect(ran()).toEqual(['pay']);
    });

    it('a call whose tool failed is not remembered: the identical retry runs', async () => {
      const id = await agent(['pay']);
      let n = 0;
      tools.handle('pay', () =>
        ++n === 1 ? { status: 503, body: 'try later' } : { body: 'paid' },
      );
      fake.push(
        { tool_calls: [call('pay', { q: 'B-1' })] },
        { tool_calls: [call('pay', { q: 'B-1', request_heartbeat: true })] },
        { tool_calls: [call('pay', { q: 'B-1' })] },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r.map((m: any) => m.status)).toEqual(['error', 'success', 'error']);
      expect(r[2].tool_return).toMatch(/^\[ToolDeduplicated\]/);
      expect(ran()).toEqual(['pay', 'pay']);
    });

    it('return_cached answers an identical call with the earlier result, in a later batch, without running the tool', async () => {
      const id = await agent(
        ['lookup'],
        [{ type: 'dedupe', tool_name: 'lookup', window_seconds: 60, mode: 'return_cached' }],
      );
      let n = 0;
      tools.handle('lookup', () => ({ body: `answer #${++n}` }));
      fake.push({ tool_calls: [call('lookup', { q: 'weather' })] });
      await send(id, 'first');
      fake.push({ tool_calls: [call('lookup', { q: 'weather' })] });
      const second = await send(id, 'second');
      expect(returns(second)[0]).toMatchObject({ status: 'success', tool_return: 'answer #1' });
      expect(ran()).toEqual(['lookup']);
    });

    it("mode off runs identical calls; a window's end lets the identical call run again", async () => {
      const off = await agent(
        ['pay'],
        [{ type: 'dedupe', tool_name: 'pay', window_seconds: 60, mode: 'off' }],
      );
      fake.push(
        { tool_calls: [call('pay', { q: 'C-1', request_heartbeat: true })] },
        { tool_calls: [call('pay', { q: 'C-1' })] },
      );
      await send(off);
      expect(ran()).toEqual(['pay', 'pay']);

      env.reset();
      const windowed = await agent(
        ['pay'],
        [{ type: 'dedupe', tool_name: 'pay', window_seconds: 60, mode: 'reject' }],
      );
      const clock = fakeClock(t);
      try {
        fake.push({ tool_calls: [call('pay', { q: 'D-1' })] });
        await send(windowed, 'first');
        clock.advance(59_000);
        fake.push({ tool_calls: [call('pay', { q: 'D-1' })] }, { content: 'ok' });
        expect(returns(await send(windowed, 'inside'))[0].tool_return).toMatch(
          /^\[ToolDeduplicated\]/,
        );
        clock.advance(2_000);
        fake.push({ tool_calls: [call('pay', { q: 'D-1' })] });
        expect(returns(await send(windowed, 'after'))[0].status).toBe('success');
      } finally {
        clock.restore();
      }
      expect(ran()).toEqual(['pay', 'pay']);
    });

    it('an update of the agent’s tool_executor applies to its next call', async () => {
      const id = await agent(['pay']);
      fake.push({ tool_calls: [call('pay', { q: 'F-1' })] });
      await send(id, 'first');
      const patched = await api(t, 'PATCH', `/v1/agents/${id}`, {
        tool_executor: { dedupe_window_seconds: 0 },
      });
      expect(patched.status).toBe(200);
      expect(patched.body.tool_executor.dedupe_window_seconds).toBe(0);
      fake.push({ tool_calls: [call('pay', { q: 'F-1' })] });
      expect(returns(await send(id, 'second'))[0].status).toBe('success');
      expect(ran()).toEqual(['pay', 'pay']);
    });

    it("the agent's tool_executor.dedupe_window_seconds 0 turns the default dedupe off", async () => {
      const id = await agent(['pay'], [], { tool_executor: { dedupe_window_seconds: 0 } });
      for (const text of ['first', 'second']) {
        fake.push({ tool_calls: [call('pay', { q: 'E-1' })] });
        await send(id, text);
      }
      expect(ran()).toEqual(['pay', 'pay']);
    });
  });

  describe('cooldown (persistent)', () => {
    it('refuses a call inside the cooldown, in a later batch too, whatever the last outcome; runs once it passed', async () => {
      const id = await agent(['ping'], [{ type: 'cooldown', tool_name: 'ping', seconds: 60 }], {
        tool_executor: { dedupe_window_seconds: 0 },
      });
      tools.handle('ping', () => ({ status: 500, body: 'down' }));
      const clock = fakeClock(t);
      try {
        fake.push({ tool_calls: [call('ping', { q: '1' })] }, { content: 'ok' });
        expect(returns(await send(id, 'first'))[0].status).toBe('error'); // ran, and failed
        clock.advance(30_000);
        fake.push({ tool_calls: [call('ping', { q: '2' })] }, { content: 'ok' });
        expect(returns(await send(id, 'second'))[0].tool_return).toBe(
          '[ToolRuleViolation] ping is cooling down (60s between calls); it may run again in 30s; allowed now: none',
        );
        clock.advance(31_000);
        tools.handle('ping', () => ({ body: 'pong' }));
        fake.push({ tool_calls: [call('ping', { q: '3' })] }, { content: 'ok' });
        expect(returns(await send(id, 'third'))[0]).toMatchObject({
          status: 'success',
          tool_return: 'pong',
        });
      } finally {
        clock.restore();
      }
      expect(ran()).toEqual(['ping', 'ping']);
    });
  });

  describe('consent meets the batch and persistent rules', () => {
    /** Letta's in-band answer to the one parked call; the continuation's response. */
    const answer = async (agentId: string, parked: any, approve: boolean) => {
      const last = parked.messages.at(-1);
      expect(last.message_type).toBe('approval_request_message');
      const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, {
        messages: [
          {
            type: 'approval',
            approvals: [
              {
                type: 'approval',
                tool_call_id: last.tool_call.tool_call_id,
                approve,
                ...(approve ? {} : { reason: 'not this one' }),
              },
            ],
          },
        ],
      });
      expect(res.status).toBe(200);
      return res.body;
    };

    it('the person is asked about the arguments the tool would get: the start rule’s args, without request_heartbeat', async () => {
      const id = await agent(
        ['pay'],
        [
          { type: 'run_first', tool_name: 'pay', args: { q: 'fixed' } },
          { type: 'requires_consent', tool_name: 'pay' },
        ],
      );
      fake.push({ tool_calls: [call('pay', { q: 'model', request_heartbeat: true })] });
      const parked = await send(id);
      expect(parked.stop_reason.stop_reason).toBe('requires_approval');
      const pending = (await api(t, 'GET', `/v1/consent/requests?agent_id=${id}`)).body;
      expect(pending).toHaveLength(1);
      expect(pending[0].arguments).toEqual({ q: 'fixed' });
      fake.push({ content: 'done' });
      await answer(id, parked, true);
      expect(tools.calls.map((c) => c.arguments)).toEqual([{ q: 'fixed' }]);
    });

    it('a denied call did not run: it takes no place under max_count_per_step, and the retry is asked about', async () => {
      const id = await agent(
        ['pay'],
        [
          { type: 'requires_consent', tool_name: 'pay' },
          { type: 'max_count_per_step', tool_name: 'pay', max_count_limit: 1 },
        ],
      );
      fake.push(
        { tool_calls: [call('pay', { q: 'first' })] },
        { tool_calls: [call('pay', { q: 'second' })] },
        { tool_calls: [call('pay', { q: 'third' })] },
        { content: 'done' },
      );
      const parked = await send(id);
      expect(parked.stop_reason.stop_reason).toBe('requires_approval');
      const denied = await answer(id, parked, false);
      expect(denied.stop_reason.stop_reason).toBe('requires_approval'); // asked about the second
      expect(returns(denied)[0].tool_return).toContain('not this one');
      const approved = await answer(id, denied, true);
      expect(approved.stop_reason.stop_reason).toBe('end_turn');
      const r = returns(approved);
      expect(r.map((m: any) => m.status)).toEqual(['success', 'error']);
      expect(r[1].tool_return).toMatch(/^\[ToolRuleViolation\] pay reached its limit of 1 call/);
      expect(tools.calls.map((c) => c.arguments)).toEqual([{ q: 'second' }]);
    });

    it('a denied call claims no exclusive group: the other tool of the group runs in the same batch', async () => {
      const id = await agent(
        ['charge_card', 'send_invoice'],
        [
          { type: 'requires_consent', tool_name: 'charge_card' },
          { type: 'exclusive_group', tools: ['charge_card', 'send_invoice'] },
        ],
      );
      fake.push(
        { tool_calls: [call('charge_card', { q: 'X' })] },
        { tool_calls: [call('send_invoice', { q: 'X' }), call('charge_card', { q: 'Y' })] },
        { content: 'done' },
      );
      const parked = await send(id);
      const after = await answer(id, parked, false);
      expect(after.stop_reason.stop_reason).toBe('end_turn');
      const r = returns(after);
      expect(r.map((m: any) => m.status)).toEqual(['error', 'success', 'error']);
      expect(r[2].tool_return).toMatch(/^\[ToolRuleViolation\] .*charge_card.*send_invoice/);
      expect(ran()).toEqual(['send_invoice']);
    });

    it('a denied call starts no cooldown; an approved one does, for the next batch', async () => {
      const id = await agent(
        ['ping'],
        [
          { type: 'requires_consent', tool_name: 'ping' },
          { type: 'cooldown', tool_name: 'ping', seconds: 3600 },
        ],
      );
      fake.push(
        { tool_calls: [call('ping', { q: '1' })] },
        { tool_calls: [call('ping', { q: '2' })] },
      );
      const parked = await send(id);
      const denied = await answer(id, parked, false);
      expect(denied.stop_reason.stop_reason).toBe('requires_approval'); // not "cooling down"
      const approved = await answer(id, denied, true);
      expect(returns(approved)[0]).toMatchObject({ status: 'success' });
      fake.push({ tool_calls: [call('ping', { q: '3' })] }, { content: 'later then' });
      const next = await send(id, 'again');
      expect(next.stop_reason.stop_reason).toBe('end_turn'); // refused at once, nobody asked
      expect(returns(next)[0].tool_return).toMatch(/^\[ToolRuleViolation\] ping is cooling down/);
      expect(tools.calls.map((c) => c.arguments)).toEqual([{ q: '2' }]);
    });
  });

  describe('execution', () => {
    it('arguments that break the tool’s JSON Schema are refused before it runs (InvalidArguments); the model self-corrects', async () => {
      const id = await agent(['lookup']);
      fake.push(
        { tool_calls: [call('lookup', { q: 5 })] },
        { tool_calls: [call('lookup', { q: 'five' })] },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r[0]).toMatchObject({ status: 'error' });
      expect(r[0].tool_return).toBe(
        '[ToolInvalidArguments] invalid arguments for lookup: /q must be string',
      );
      expect(tools.calls.map((c) => c.arguments)).toEqual([{ q: 'five' }]);
    });

    it('request_heartbeat is taken off before the arguments are checked: a strict schema still accepts the call', async () => {
      const strict = `strict_${Math.random().toString(36).slice(2, 8)}`;
      await tools.declare(t, strict, {
        parameters: {
          type: 'object',
          properties: { q: { type: 'string' } },
          required: ['q'],
          additionalProperties: false,
        },
      });
      const id = await agent([strict]);
      fake.push(
        { tool_calls: [call(strict, { q: 'x', request_heartbeat: true })] },
        { content: 'done' },
      );
      const res = await send(id);
      expect(returns(res)[0]).toMatchObject({ status: 'success' });
      expect(tools.calls.map((c) => c.arguments)).toEqual([{ q: 'x' }]);
      // the schema the model is offered gains the optional request_heartbeat
      const offered = fake.requests[0].body.tools[0].function.parameters;
      expect(offered.properties.request_heartbeat).toMatchObject({ type: 'boolean' });
      expect(offered.required ?? []).not.toContain('request_heartbeat');
    });

    it("the agent's tool_executor.tool_timeout_seconds: a tool that does not finish is a Timeout, the batch goes on", async () => {
      const id = await agent(['slow', 'lookup'], [], {
        tool_executor: { tool_timeout_seconds: 1 },
      });
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      tools.handle('slow', async (_c, hungUp) => {
        await Promise.race([held, hungUp]);
        return { body: 'too late' };
      });
      fake.push(
        { tool_calls: [call('slow', { q: 'x' }), call('lookup', { q: 'y' })] },
        { content: 'it hung' },
      );
      try {
        const res = await send(id);
        expect(res.stop_reason.stop_reason).toBe('end_turn');
        const r = returns(res);
        expect(r[0]).toMatchObject({ status: 'error' });
        expect(r[0].tool_return).toMatch(
          /^\[ToolTimeout\] slow did not finish within 1s; its outcome is unknown/,
        );
        expect(r[1]).toMatchObject({ status: 'success' }); // the next call still ran
        expect(fake.requests).toHaveLength(2);
      } finally {
        release();
      }
    });

    it('read_only calls that run together still obey dedupe, max count and cooldown: the later ones are refused, not run beside the first', async () => {
      const id = await agent(
        ['lookup', 'status', 'init'],
        [
          { type: 'dedupe', tool_name: 'lookup', window_seconds: 60, mode: 'reject' },
          { type: 'max_count_per_step', tool_name: 'status', max_count_limit: 1 },
          { type: 'cooldown', tool_name: 'init', seconds: 60 },
        ],
      );
      // each call is slow, so a second one checked while the first runs would run beside it
      const slow = async (c: { name: string }) => {
        await new Promise((r) => setTimeout(r, 100));
        return { body: `ok:${c.name}` };
      };
      for (const name of ['lookup', 'status', 'init']) tools.handle(name, slow);
      fake.push(
        {
          tool_calls: [
            call('lookup', { q: 'same' }),
            call('lookup', { q: 'same' }),
            call('status', { q: '1' }),
            call('status', { q: '2' }),
            call('init', { q: '1' }),
            call('init', { q: '2' }),
          ],
        },
        { content: 'done' },
      );
      const res = await send(id);
      const r = returns(res);
      expect(r.map((m: any) => m.status)).toEqual([
        'success',
        'error',
        'success',
        'error',
        'success',
        'error',
      ]);
      expect(r[1].tool_return).toMatch(/^\[ToolDeduplicated\]/);
      expect(r[3].tool_return).toMatch(/^\[ToolRuleViolation\] status reached its limit of 1 call/);
      expect(r[5].tool_return).toMatch(/^\[ToolRuleViolation\] init is cooling down/);
      expect(ran().sort()).toEqual(['init', 'lookup', 'status']);
    });

    it('contiguous read_only calls run concurrently; a side_effecting call runs alone', async () => {
      const id = await agent(['lookup', 'status', 'pay']);
      let inFlight = 0;
      let most = 0;
      const arrived: string[] = [];
      let bothIn!: () => void;
      const both = new Promise<void>((r) => (bothIn = r));
      const track = async (c: { name: string }) => {
        arrived.push(c.name);
        most = Math.max(most, ++inFlight);
        if (arrived.length === 2) bothIn();
        // the first two (read_only) wait for each other: they only finish if they run together
        if (arrived.length <= 2) await both;
        inFlight--;
        return { body: `ok:${c.name}` };
      };
      tools.handle('lookup', track);
      tools.handle('status', track);
      tools.handle('pay', track);
      fake.push(
        {
          tool_calls: [
            call('lookup', { q: '1' }),
            call('status', { q: '2' }),
            call('pay', { q: '3' }),
          ],
        },
        { content: 'done' },
      );
      const res = await send(id);
      expect(returns(res).map((m: any) => m.status)).toEqual(['success', 'success', 'success']);
      expect(most).toBe(2);
      expect(arrived.at(-1)).toBe('pay');
    });
  });
});
