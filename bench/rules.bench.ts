/**
 * The executor's own overhead per call: a no-op tool, the in-memory store, 0 / 10 / 100 rules on the
 * agent (none of which refuses the measured call). Prints one line per rule count; asserts nothing.
 */
import type { AgentToolSetup, ToolInvoker } from '../src/core/executor/contracts';
import { InMemoryStateStore } from '../src/core/executor/in-memory-state-store';
import { ToolExecutor } from '../src/core/executor/tool-executor';
import type { ToolRule } from '../src/core/rules/tool-rule';
import type { ToolDefinition } from '../src/core/tools/tool-definition';

const tool = (name: string): ToolDefinition => ({
  name,
  description: name,
  parameters: { type: 'object', properties: { n: { type: 'integer' } } },
  safety: 'read_only',
  kind: 'builtin',
});

/** A realistic mix over 50 other tools, plus a few that concern the measured tool without refusing it. */
function rulesFor(count: number): ToolRule[] {
  const mine: ToolRule[] = [
    { type: 'max_count_per_step', tool_name: 'noop', max_count_limit: 1e9 },
    { type: 'exclusive_group', tools: ['noop', 't1'] },
    { type: 'continue_loop', tool_name: 'noop' },
  ];
  const others = (i: number): ToolRule => {
    const t = `t${(i % 49) + 1}`;
    const u = `t${((i + 7) % 49) + 1}`;
    switch (i % 10) {
      case 0:
        return { type: 'cooldown', tool_name: t, seconds: 5 };
      case 1:
        return { type: 'requires_preceding_tools', tool_name: t, tools: [u] };
      case 2:
        return { type: 'constrain_child_tools', tool_name: t, children: [u] };
      case 3:
        return { type: 'max_count_per_step', tool_name: t, max_count_limit: 3 };
      case 4:
        return { type: 'dedupe', tool_name: t, window_seconds: 60, mode: 'reject' };
      case 5:
        return { type: 'requires_consent', tool_name: t };
      case 6:
        return { type: 'parent_last_tool', tool_name: t, children: [u] };
      case 7:
        return { type: 'required_before_exit', tool_name: t };
      case 8:
        return { type: 'exit_loop', tool_name: t };
      default:
        return { type: 'requires_following_tools', tool_name: t, tools: [u] };
    }
  };
  if (count === 0) return [];
  const out = count >= mine.length ? [...mine] : [];
  for (let i = 0; out.length < count; i++) out.push(others(i));
  return out;
}

async function measure(ruleCount: number): Promise<string> {
  const setup: AgentToolSetup = {
    tenantId: 'default',
    agentId: 'agent-bench',
    tools: [tool('noop'), ...Array.from({ length: 49 }, (_, i) => tool(`t${i + 1}`))],
    rules: rulesFor(ruleCount),
    settings: { toolTimeoutMs: 120_000, consentTimeoutMs: 300_000, dedupeWindowMs: 300_000 },
  };
  const result = { status: 'success' as const, value: 'ok' };
  const invoker: ToolInvoker = { invoke: () => Promise.resolve(result) };
  let now = 1_700_000_000_000;
  const store = new InMemoryStateStore();
  const executor = new ToolExecutor({
    clock: { now: () => now },
    store,
    invoker,
    consent: { check: () => Promise.resolve({ kind: 'granted', grantId: 'g' }) },
    limits: { batchTtlMs: 86_400_000 },
  });
  const meta = { tenantId: 'default', agentId: setup.agentId, runId: 'run', batchId: 'b' };
  const calls = 200_000;
  const warmup = 20_000;
  const samples = new Float64Array(calls);
  let pass = executor.newPass(setup, 'b0');
  for (let i = 0; i < calls + warmup; i++) {
    if (i % 1000 === 0) {
      pass = executor.newPass(setup, `b${i}`); // bounded history, like real passes
      store.claims.clear(); // bounded, like the LRU in front of the database
    }
    now++;
    const call = { toolCallId: `c${i}`, name: 'noop', arguments: { n: i } };
    const t0 = process.hrtime.bigint();
    const out = await executor.execute(setup, pass, call, meta);
    const dt = Number(process.hrtime.bigint() - t0) / 1000;
    if (out.kind !== 'executed') throw new Error(`unexpected outcome: ${out.returnValue}`);
    if (i >= warmup) samples[i - warmup] = dt;
  }
  samples.sort();
  const median = samples[Math.floor(calls / 2)];
  const p99 = samples[Math.floor(calls * 0.99)];
  let total = 0;
  for (const s of samples) total += s;
  const perSecond = Math.round(calls / (total / 1e6));
  return `rules=${ruleCount} median_us=${median.toFixed(1)} p99_us=${p99.toFixed(1)} calls_per_s=${perSecond}`;
}

async function main(): Promise<void> {
  for (const n of [0, 10, 100]) console.log(await measure(n));
}

void main();
