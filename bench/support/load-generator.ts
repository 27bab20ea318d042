/* eslint-disable @typescript-eslint/no-explicit-any */
/**
 * The load generator of `npm run bench` and `npm run bench:floor`: one agent per client, each client runs
 * conversations one after another (an agent processes one batch at a time); a conversation is one
 * `POST /v1/agents/{id}/messages` that takes 4 steps (3 tool calls, then the answer). Prints one line per level.
 */
import { performance } from 'node:perf_hooks';
import { BenchServer, startServerProcess } from './server-process';

export const STEPS_PER_CONVERSATION = 4;

const SCRIPT = [
  { tool_calls: [{ name: 'send_message', arguments: { message: 'looking (1/3)' } }] },
  { tool_calls: [{ name: 'send_message', arguments: { message: 'still looking (2/3)' } }] },
  { tool_calls: [{ name: 'send_message', arguments: { message: 'almost (3/3)' } }] },
  { content: 'Here is your answer.' },
];

export interface LevelResult {
  clients: number;
  convPerS: number;
  usPerStep: number;
  serverCpuUsPerStep: number;
  p50Ms: number;
  p99Ms: number;
  rssMb: number;
  /** The highest RSS sampled during the measured conversations. */
  rssPeakMb: number;
  history: number;
}

export function percentile(sorted: number[], p: number): number {
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

export async function createAgent(base: string, i: number): Promise<string> {
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

export async function converse(base: string, agentId: string): Promise<void> {
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

/** `total` conversations over the agents, each agent one at a time; calls `done` with each one's latency. */
async function converseAll(
  base: string,
  agents: string[],
  total: number,
  done: (ms: number) => void = () => undefined,
): Promise<void> {
  let next = 0;
  await Promise.all(
    agents.map(async (id) => {
      while (next < total) {
        next++;
        const t0 = performance.now();
        await converse(base, id);
        done(performance.now() - t0);
      }
    }),
  );
}

/**
 * One measured level: `total` conversations over `clients` agents, after `warmup` conversations (at least
 * one per agent): a fresh process takes a few thousand conversations to reach the cost per step it then
 * keeps (V8 compiling the hot path on threads whose CPU counts as the server's, its heap growing to the
 * working size), which a server running for days does not pay per step (docs/performance.md).
 */
export async function runLevel(
  server: BenchServer,
  clients: number,
  total: number,
  history: number,
  warmup: number,
): Promise<LevelResult> {
  const base = server.baseUrl;
  const agents = await Promise.all(Array.from({ length: clients }, (_, i) => createAgent(base, i)));
  for (const id of agents) if (history > 0) await server.seedHistory(id, history);
  await Promise.all(agents.map((id) => converse(base, id)));
  await converseAll(base, agents, warmup - clients);
  const latencies: number[] = [];
  // BENCH_CPU_PROF=<file>: a CPU profile of the server over the measured conversations
  const profile = process.env.BENCH_CPU_PROF;
  if (profile) await server.profileStart();
  const cpuBefore = (await server.usage()).cpuUs;
  const started = performance.now();
  await converseAll(base, agents, total, (ms) => latencies.push(ms));
  const elapsedMs = performance.now() - started;
  const after = await server.usage();
  if (profile) await server.profileStop(`${profile}.clients${clients}.cpuprofile`);
  latencies.sort((a, b) => a - b);
  const steps = latencies.length * STEPS_PER_CONVERSATION;
  return {
    clients,
    convPerS: (latencies.length / elapsedMs) * 1000,
    usPerStep: (elapsedMs * 1000) / steps,
    serverCpuUsPerStep: (after.cpuUs - cpuBefore) / steps,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    rssMb: after.rssMb,
    rssPeakMb: after.rssPeakMb,
    history,
  };
}

export function formatLevel(r: LevelResult): string {
  return (
    `clients=${r.clients}${r.history ? ` history=${r.history}` : ''} conv_per_s=${Math.round(r.convPerS)} ` +
    `us_per_step=${Math.round(r.usPerStep)} server_cpu_us_per_step=${Math.round(r.serverCpuUsPerStep)} ` +
    `p50_ms=${r.p50Ms.toFixed(1)} p99_ms=${r.p99Ms.toFixed(1)} rss_mb=${Math.round(r.rssMb)} rss_peak_mb=${Math.round(r.rssPeakMb)}`
  );
}

/**
 * Env: CONVERSATIONS (measured, default 2000), WARMUP (conversations before them, default 4000), CLIENTS
 * (default "1,50"), HISTORY (messages each agent starts with, default 0).
 */
export function benchSettings() {
  return {
    conversations: Number(process.env.CONVERSATIONS ?? 2000),
    warmup: Number(process.env.WARMUP ?? 4000),
    clients: (process.env.CLIENTS ?? '1,50').split(',').map(Number),
    history: Number(process.env.HISTORY ?? 0),
  };
}

/** Runs every level against a server started in a child process; prints one line per level. */
export async function benchServer(file: string): Promise<LevelResult[]> {
  const { conversations, warmup, clients, history } = benchSettings();
  const server = await startServerProcess(file);
  const results: LevelResult[] = [];
  try {
    for (const c of clients) {
      const r = await runLevel(server, c, conversations, history, warmup);
      results.push(r);
      process.stdout.write(`${formatLevel(r)}\n`);
    }
  } finally {
    await server.close();
  }
  return results;
}
