import fc from 'fast-check';
import {
  parksOn,
  type ToolInvoker,
  type ToolOutcome,
} from '../../../../src/core/executor/contracts';
import { InMemoryStateStore } from '../../../../src/core/executor/in-memory-state-store';
import { ToolExecutor } from '../../../../src/core/executor/tool-executor';
import { ruleIndexFor } from '../../../../src/core/rules/rule-index';
import type { ToolRule } from '../../../../src/core/rules/tool-rule';
import { aSetup, aTool, FakeClock, ManualTimers } from './executor-harness';

const TOOLS = ['a', 'b', 'c', 'd', 'e'];
const tool = fc.constantFrom(...TOOLS);

const rule: fc.Arbitrary<ToolRule> = fc.oneof(
  fc.record({
    type: fc.constantFrom('max_count_per_step' as const, 'max_calls' as const),
    tool_name: fc.constantFrom(...TOOLS, '*'),
    max_count_limit: fc.integer({ min: 0, max: 3 }),
  }),
  fc.record({
    type: fc.constant('exclusive_group' as const),
    tools: fc.uniqueArray(tool, { minLength: 2, maxLength: 3 }),
  }),
  fc.record({
    type: fc.constant('cooldown' as const),
    tool_name: tool,
    seconds: fc.integer({ min: 1, max: 30 }),
  }),
  fc.record({
    type: fc.constant('requires_preceding_tools' as const),
    tool_name: tool,
    tools: fc.uniqueArray(tool, { minLength: 1, maxLength: 2 }),
  }),
  fc.record({
    type: fc.constant('constrain_child_tools' as const),
    tool_name: tool,
    children: fc.uniqueArray(tool, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({ type: fc.constant('run_first' as const), tool_name: tool }),
  fc.record({
    type: fc.constant('parent_last_tool' as const),
    tool_name: tool,
    children: fc.uniqueArray(tool, { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    type: fc.constant('requires_following_tools' as const),
    tool_name: tool,
    tools: fc.uniqueArray(tool, { minLength: 1, maxLength: 2 }),
  }),
  fc.record(
    {
      type: fc.constant('conditional' as const),
      tool_name: tool,
      // the tools answer `yes`, `no` or `other` (or fail)
      child_output_mapping: fc.dictionary(fc.constantFrom('yes', 'no'), tool, { minKeys: 1 }),
      default_child: tool,
      require_output_mapping: fc.boolean(),
    },
    { requiredKeys: ['type', 'tool_name', 'child_output_mapping'] },
  ),
  fc.record({
    type: fc.constant('dedupe' as const),
    tool_name: fc.constantFrom(...TOOLS, '*'),
    window_seconds: fc.integer({ min: 1, max: 30 }),
    mode: fc.constantFrom('reject' as const, 'return_cached' as const, 'off' as const),
  }),
);

type Step =
  | { kind: 'calls'; calls: { name: string; fail: boolean; arg: number }[] }
  | { kind: 'heartbeat' }
  | { kind: 'batch' }
  | { kind: 'wait'; seconds: number }
  | { kind: 'restart' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('calls' as const),
      calls: fc.array(
        fc.record({
          name: fc.oneof(
            { weight: 9, arbitrary: tool },
            { weight: 1, arbitrary: fc.constant('zzz') },
          ),
          fail: fc.boolean(),
          arg: fc.integer({ min: 0, max: 2 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'heartbeat' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'batch' as const }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('wait' as const),
      seconds: fc.integer({ min: 1, max: 20 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

interface Execution {
  name: string;
  toolCallId: string;
  batch: string;
  at: number;
}

/** Runs a random session and returns what ran and every call with its outcome. */
async function session(rules: ToolRule[], steps: Step[], readOnly: boolean) {
  const clock = new FakeClock();
  const store = new InMemoryStateStore();
  const executions: Execution[] = [];
  let batchId = 'b1';
  const failing = new Set<string>();
  const invoker: ToolInvoker = {
    invoke: (t, _args, ctx) => {
      executions.push({
        name: t.name,
        toolCallId: ctx.toolCallId,
        batch: batchId,
        at: clock.now(),
      });
      return Promise.resolve(
        failing.has(ctx.toolCallId)
          ? { status: 'error', value: 'failed' }
          : { status: 'success', value: 'ok' },
      );
    },
  };
  const make = () =>
    new ToolExecutor({
      clock,
      store,
      invoker,
      consent: { check: () => Promise.resolve({ kind: 'granted', grantId: 'g' }) },
      limits: { batchTtlMs: 1e9 },
      timers: new ManualTimers(),
    });
  const setup = aSetup(
    rules,
    TOOLS.map((n) => aTool(n, readOnly ? 'read_only' : 'side_effecting')),
  );
  let executor = make();
  let pass = executor.newPass(setup, batchId);
  let n = 0;
  let batches = 1;
  const answered: { sent: string[]; outcomes: ToolOutcome[] }[] = [];
  for (const s of steps) {
    switch (s.kind) {
      case 'calls': {
        const calls = s.calls.map((c) => {
          const id = `call-${++n}`;
          if (c.fail) failing.add(id);
          return { toolCallId: id, name: c.name, arguments: { v: c.arg } };
        });
        answered.push({
          sent: calls.map((c) => c.toolCallId),
          outcomes: await executor.executeBatch(setup, pass, calls, {
            tenantId: 'default',
            agentId: setup.agentId,
            runId: 'r',
            batchId,
          }),
        });
        break;
      }
      case 'heartbeat':
        pass = executor.newPass(setup, batchId);
        break;
      case 'batch':
        await executor.completeBatch(batchId);
        batchId = `b${++batches}`;
        pass = executor.newPass(setup, batchId);
        break;
      case 'wait':
        clock.advance(s.seconds * 1000);
        break;
      case 'restart':
        executor = make();
        pass = executor.newPass(setup, batchId);
        break;
    }
  }
  return { executions, answered };
}

const scenario = fc.record({
  rules: fc.array(rule, { maxLength: 6 }),
  steps: fc.array(step, { minLength: 1, maxLength: 25 }),
  readOnly: fc.boolean(),
});

describe('executor invariants over random rules and call sequences', () => {
  it('max calls are never exceeded in a batch, across heartbeats and restarts', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rules, steps, readOnly }) => {
        const { executions } = await session(rules, steps, readOnly);
        const counts = new Map<string, number>();
        for (const e of executions)
          counts.set(`${e.batch}|${e.name}`, (counts.get(`${e.batch}|${e.name}`) ?? 0) + 1);
        for (const r of rules) {
          if (r.type !== 'max_count_per_step' && r.type !== 'max_calls') continue;
          for (const [key, count] of counts) {
            const name = key.split('|')[1];
            if (r.tool_name === '*' || r.tool_name === name)
              expect(count).toBeLessThanOrEqual(r.max_count_limit);
          }
        }
      }),
      { numRuns: 200 },
    );
  });

  it('no two tools of an exclusive group run in one batch', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rules, steps, readOnly }) => {
        const { executions } = await session(rules, steps, readOnly);
        for (const r of rules) {
          if (r.type !== 'exclusive_group') continue;
          const used = new Map<string, Set<string>>();
          for (const e of executions) {
            if (!r.tools.includes(e.name)) continue;
            const set = used.get(e.batch) ?? new Set<string>();
            set.add(e.name);
            used.set(e.batch, set);
          }
          for (const set of used.values()) expect(set.size).toBeLessThanOrEqual(1);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('no execution falls inside a cooldown, across batches and restarts', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rules, steps, readOnly }) => {
        const { executions } = await session(rules, steps, readOnly);
        for (const r of rules) {
          if (r.type !== 'cooldown') continue;
          const times = executions.filter((e) => e.name === r.tool_name).map((e) => e.at);
          for (let i = 1; i < times.length; i++)
            expect(times[i] - times[i - 1]).toBeGreaterThanOrEqual(r.seconds * 1000);
        }
      }),
      { numRuns: 200 },
    );
  });

  it('every call is answered, in order, and no refused call was executed', async () => {
    await fc.assert(
      fc.asyncProperty(scenario, async ({ rules, steps, readOnly }) => {
        const { executions, answered } = await session(rules, steps, readOnly);
        const ran = new Set(executions.map((e) => e.toolCallId));
        expect(ran.size).toBe(executions.length); // at most once per tool_call_id
        for (const { sent, outcomes } of answered) {
          expect(outcomes.map((o) => o.toolCallId)).toEqual(sent);
          for (const o of outcomes) {
            const executed = o.kind === 'executed' || o.kind === 'timeout';
            expect(ran.has(o.toolCallId)).toBe(executed);
            if (o.kind === 'refused') expect(o.error?.type).toBeDefined();
          }
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('a person is only asked about calls that can run once approved', () => {
  // every rule sees a turn's waiting calls; a grant covers calls with v 0, the rest wait for a person
  const turns = fc.array(
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.array(
          fc.record({
            name: tool,
            arg: fc.integer({ min: 0, max: 2 }),
            // what the tool answers when it runs (conditional rules read it), or that it fails
            output: fc.constantFrom('yes', 'no', 'other', 'fails'),
          }),
          { minLength: 1, maxLength: 5 },
        ),
      },
      { weight: 1, arbitrary: fc.constantFrom('wait' as const, 'batch' as const) },
    ),
    { minLength: 1, maxLength: 8 },
  );

  it("every call that waited for consent or the client's result runs once approved or answered, and a held call is judged after it, in order, once, whatever the rules", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(rule, { maxLength: 5 }),
        turns,
        fc.boolean(),
        // e runs on the client (the client answers it, once approved if it needs consent)
        fc.boolean(),
        // whether e needs consent; the others always do
        fc.boolean(),
        async (rules, steps, readOnly, clientE, consentE) => {
          const clock = new FakeClock();
          const outputs = new Map<string, string>();
          /** Each execution: its call and the round (of its turn's decisions) it ran in. */
          const ran: { id: string; round: number }[] = [];
          let round = 0;
          /** A person is asked once per call, and approves what was asked about. */
          const asked = new Set<string>();
          const executor = new ToolExecutor({
            clock,
            store: new InMemoryStateStore(),
            invoker: {
              invoke: (_t, _args, ctx) => {
                ran.push({ id: ctx.toolCallId, round });
                const value = outputs.get(ctx.toolCallId)!;
                return Promise.resolve({
                  status: value === 'fails' ? 'error' : 'success',
                  value,
                });
              },
            },
            consent: {
              check: (req) => {
                if (req.arguments.v === 0)
                  return Promise.resolve({ kind: 'granted', grantId: 'g' });
                const requestId = `req-${req.toolCallId}`;
                if (asked.has(req.toolCallId))
                  return Promise.resolve({ kind: 'approved', requestId });
                asked.add(req.toolCallId);
                return Promise.resolve({ kind: 'pending', requestId });
              },
            },
            limits: { batchTtlMs: 1e9 },
            timers: new ManualTimers(),
          });
          const setup = aSetup(
            [
              ...(consentE ? ['*'] : ['a', 'b', 'c', 'd']).map((tool_name): ToolRule => ({
                type: 'requires_consent',
                tool_name,
              })),
              ...rules,
            ],
            TOOLS.map((n) => ({
              ...aTool(n, readOnly ? 'read_only' : 'side_effecting'),
              ...(clientE && n === 'e' ? { kind: 'client' as const } : {}),
            })),
          );
          const ordered = ruleIndexFor(setup).hasOrderingRules;
          let batchId = 'b1';
          let pass = executor.newPass(setup, batchId);
          const meta = () => ({ tenantId: 'default', agentId: setup.agentId, runId: 'r', batchId });
          let n = 0;
          for (const s of steps) {
            if (s === 'wait') clock.advance(15_000);
            else if (s === 'batch') {
              await executor.completeBatch(batchId);
              batchId = `b${n}`;
              pass = executor.newPass(setup, batchId);
            } else {
              const calls = s.map((c) => {
                const toolCallId = `call-${++n}`;
                outputs.set(toolCallId, c.output);
                return { toolCallId, name: c.name, arguments: { v: c.arg } };
              });
              /** The calls that wait or are held, in order; the client's with its answer. */
              const goOn = (outcomes: ToolOutcome[]) =>
                outcomes.filter(parksOn).map((o) => {
                  const call = calls.find((c) => c.toolCallId === o.toolCallId)!;
                  if (o.kind !== 'client_required') return call;
                  const value = outputs.get(o.toolCallId)!;
                  const status = value === 'fails' ? ('error' as const) : ('success' as const);
                  const clientResult = {
                    status,
                    value,
                    startedAt: o.startedAt!,
                    heartbeat: false,
                  };
                  return { ...call, clientResult };
                });
              const waited = new Set<string>();
              const final = new Map<string, ToolOutcome>();
              round = 0;
              let outcomes = await executor.executeBatch(setup, pass, calls, meta());
              // the person approves every request, the client answers its calls; the batch goes on
              // with the waiting and held calls, in order, until none is left
              for (;;) {
                for (const o of outcomes) {
                  final.set(o.toolCallId, o);
                  if (o.kind === 'consent_required' || o.kind === 'client_required')
                    waited.add(o.toolCallId);
                  // a call is held only behind a waiting one, and only with ordering rules
                  if (o.kind === 'deferred') expect(ordered).toBe(true);
                }
                const parked = goOn(outcomes);
                if (parked.length === 0) break;
                // a held call never ran before the decisions it waits for
                const held = outcomes.filter((o) => o.kind === 'deferred').map((o) => o.toolCallId);
                expect(ran.filter((r) => held.includes(r.id))).toEqual([]);
                expect(++round).toBeLessThan(3 * calls.length + 2);
                outcomes = await executor.executeBatch(setup, pass, parked, meta());
              }
              // (a call that runs and fails has run: its status is the tool's)
              expect([...waited].map((id) => `${id}:${final.get(id)!.kind}`)).toEqual(
                [...waited].map((id) => `${id}:executed`),
              );
              // nothing ran twice
              const ids = ran.map((r) => r.id);
              expect(new Set(ids).size).toBe(ids.length);
              // with ordering rules, the turn's calls that ran take their places in the pass history
              // in the turn's order, the held ones after the calls they waited for
              if (ordered) {
                const inTurn = calls.map((c) => c.toolCallId);
                const history = pass.history
                  .map((e) => e.toolCallId)
                  .filter((i) => inTurn.includes(i));
                expect(history).toEqual(inTurn.filter((i) => history.includes(i)));
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a turn whose requests are all approved ends as it would have had they been approved at once: what ran, ran in the same order', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(rule, { maxLength: 5 }),
        turns,
        fc.boolean(),
        async (rules, steps, consentE) => {
          const setup = aSetup(
            [
              ...(consentE ? ['*'] : ['a', 'b', 'c', 'd']).map((tool_name): ToolRule => ({
                type: 'requires_consent',
                tool_name,
              })),
              ...rules,
            ],
            TOOLS.map((n) => aTool(n, 'side_effecting')),
          );
          /** An agent whose person answers each request later (`later`), or at once. */
          const agent = (later: boolean) => {
            const clock = new FakeClock();
            const ran: string[] = [];
            const asked = new Set<string>();
            const executor = new ToolExecutor({
              clock,
              store: new InMemoryStateStore(),
              invoker: {
                invoke: (_t, args, ctx) => {
                  ran.push(ctx.toolCallId);
                  const value = String(args.output);
                  return Promise.resolve({
                    status: value === 'fails' ? 'error' : 'success',
                    value,
                  });
                },
              },
              consent: {
                check: (req) => {
                  if (req.arguments.v === 0)
                    return Promise.resolve({ kind: 'granted', grantId: 'g' });
                  const requestId = `req-${req.toolCallId}`;
                  if (!later || asked.has(req.toolCallId))
                    return Promise.resolve({ kind: 'approved', requestId });
                  asked.add(req.toolCallId);
                  return Promise.resolve({ kind: 'pending', requestId });
                },
              },
              limits: { batchTtlMs: 1e9 },
              timers: new ManualTimers(),
            });
            return { clock, ran, executor, pass: executor.newPass(setup, 'b0'), batchId: 'b0' };
          };
          const ordered = ruleIndexFor(setup).hasOrderingRules;
          const now = agent(false);
          const later = agent(true);
          let n = 0;
          for (const s of steps) {
            if (s === 'wait') for (const x of [now, later]) x.clock.advance(15_000);
            else if (s === 'batch')
              for (const x of [now, later]) {
                await x.executor.completeBatch(x.batchId);
                x.batchId = `b${n}`;
                x.pass = x.executor.newPass(setup, x.batchId);
              }
            else {
              // each call's arguments its own: no two calls are the same one for dedupe
              const calls = s.map((c) => ({
                toolCallId: `call-${++n}`,
                name: c.name,
                arguments: { v: c.arg, output: c.output, n },
              }));
              const meta = (x: typeof now) => ({
                tenantId: 'default',
                agentId: setup.agentId,
                runId: 'r',
                batchId: x.batchId,
              });
              await now.executor.executeBatch(setup, now.pass, calls, meta(now));
              let outcomes = await later.executor.executeBatch(
                setup,
                later.pass,
                calls,
                meta(later),
              );
              for (let round = 0; outcomes.some(parksOn); round++) {
                expect(round).toBeLessThan(3 * calls.length);
                const ids = outcomes.filter(parksOn).map((o) => o.toolCallId);
                outcomes = await later.executor.executeBatch(
                  setup,
                  later.pass,
                  calls.filter((c) => ids.includes(c.toolCallId)),
                  meta(later),
                );
              }
              // with ordering rules in the same order; without, a call may run ahead of a waiting one
              const seen = (ids: string[]) => (ordered ? ids : [...ids].sort());
              expect(seen(later.ran)).toEqual(seen(now.ran));
              expect(seen(later.pass.history.map((e) => e.toolCallId))).toEqual(
                seen(now.pass.history.map((e) => e.toolCallId)),
              );
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
