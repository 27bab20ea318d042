/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * npm run bench
 *
 * Drives N conversations through the HTTP API against the real app (SQLite file, every message persisted),
 * with the offline `scripted` model. Each conversation: a user message, 3 tool calls over 3 model calls, and a
 * final answer (4 model calls = 4 steps). Runs once sequentially (1 client) and once with 50 concurrent
 * clients (one agent per client: an agent processes one batch at a time). Prints one line per concurrency:
 *   clients=50 conv_per_s=820 us_per_step=240 p50_ms=55 p99_ms=140 rss_mb=180
 * us_per_step is wall time divided by the steps completed (throughput, all clients together).
 * Env: CONVERSATIONS (default 400), CLIENTS (default "1,50").
 */
import { performance } from 'node:perf_hooks';
import { startApp } from '../test/support/app-harness';

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 400);
const CLIENTS = (process.env.CLIENTS ?? '1,50').split(',').map(Number);
const STEPS_PER_CONVERSATION = 4;

const SCRIPT = [
  { tool_calls: [{ name: 'send_message', arguments: { message: 'looking (1/3)' } }] },
  { tool_calls: [{ name: 'send_message', arguments: { message: 'still looking (2/3)' } }] },
  { tool_calls: [{ name: 'send_message', arguments: { message: 'almost (3/3)' } }] },
  { content: 'Here is your answer.' },
];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

async function post(base: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function createAgent(base: string, i: number): Promise<string> {
  const agent = await post(base, '/v1/agents/', {
    name: `bench-${i}-${Date.now()}`,
    system: 'You are a benchmark agent.',
    llm_config: { model: 'scripted', model_endpoint_type: 'scripted', context_window: 8000 },
    tools: ['send_message'],
    include_base_tools: false,
    // the loop continues after each send_message without a heartbeat request
    tool_rules: [{ type: 'continue_loop', tool_name: 'send_message' }],
    model_script: SCRIPT,
  });
  return agent.id as string;
}

async function runLevel(base: string, clients: number, total: number): Promise<string> {
  const agents = await Promise.all(Array.from({ length: clients }, (_, i) => createAgent(base, i)));
  // warm-up: one conversation per agent (caches, JIT), not measured
  await Promise.all(agents.map((id) => converse(base, id)));
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    agents.map(async (id) => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        await converse(base, id);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  const convPerS = (n / elapsedMs) * 1000;
  const usPerStep = (elapsedMs * 1000) / (n * STEPS_PER_CONVERSATION);
  const rss = process.memoryUsage().rss / 1024 / 1024;
  return (
    `clients=${clients} conv_per_s=${Math.round(convPerS)} us_per_step=${Math.round(usPerStep)} ` +
    `p50_ms=${percentile(latencies, 50).toFixed(1)} p99_ms=${percentile(latencies, 99).toFixed(1)} ` +
    `rss_mb=${Math.round(rss)}`
  );
}

async function converse(base: string, agentId: string): Promise<void> {
  const res = await post(base, `/v1/agents/${agentId}/messages`, {
    messages: [{ role: 'user', content: 'find it' }],
  });
  if (
    res.stop_reason?.stop_reason !== 'end_turn' ||
    res.usage?.step_count !== STEPS_PER_CONVERSATION
  ) {
    throw new Error(`unexpected conversation result: ${JSON.stringify(res).slice(0, 500)}`);
  }
}

async function main(): Promise<void> {
  const t = await startApp();
  try {
    for (const clients of CLIENTS) {
      process.stdout.write(`${await runLevel(t.baseUrl, clients, CONVERSATIONS)}\n`);
    }
  } finally {
    await t.close();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
