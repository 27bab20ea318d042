/**
 * npm run bench:cluster
 *
 * The conversations of `npm run bench` (bench/support/load-generator.ts) against 1, 2 and 3 server processes on one fresh PostgreSQL
 * database (leases, event bus and all), with the clients in this process. Each conversation: a user
 * message, 3 tool calls over 3 model calls and a final answer (4 steps), on the offline `scripted` model.
 * One agent per client. ROUTING=sticky (default): a client always talks to the same instance, as behind
 * a load balancer with affinity; ROUTING=spread: each conversation goes to the next instance, so the
 * agent's lease holder is usually another instance than the one the request arrives at.
 * Prints one line per instance count:
 *   instances=2 clients=50 routing=sticky conv_per_s=120 us_per_step=2080 p50_ms=400 p99_ms=600
 * Env: CONVERSATIONS (default 400), CLIENTS (default 50), INSTANCES (default "1,2,3"), ROUTING.
 * Set CLUSTER_USE_DIST=1 after `npm run build` to run the compiled servers.
 */
import { performance } from 'node:perf_hooks';
import { freshDatabase, pgUnavailable, startInstance } from '../test/support/cluster-harness';
import {
  converse,
  createAgent,
  percentile,
  STEPS_PER_CONVERSATION,
} from './support/load-generator';

const CONVERSATIONS = Number(process.env.CONVERSATIONS ?? 400);
const CLIENTS = Number(process.env.CLIENTS ?? 50);
const INSTANCES = (process.env.INSTANCES ?? '1,2,3').split(',').map(Number);
const ROUTING = process.env.ROUTING === 'spread' ? 'spread' : 'sticky';
async function runLevel(urls: string[]): Promise<string> {
  const agents = await Promise.all(
    Array.from({ length: CLIENTS }, (_, i) => createAgent(urls[i % urls.length], i)),
  );
  const urlFor = (client: number, conversation: number) =>
    urls[(ROUTING === 'sticky' ? client : client + conversation) % urls.length];
  // warm-up: one conversation per agent (JIT, caches, leases), not measured
  await Promise.all(agents.map((id, i) => converse(urlFor(i, 0), id)));
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    agents.map(async (id, i) => {
      let mine = 0;
      while (next < CONVERSATIONS) {
        next++;
        const t0 = performance.now();
        await converse(urlFor(i, ++mine), id);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const elapsedMs = performance.now() - started;
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  return (
    `instances=${urls.length} clients=${CLIENTS} routing=${ROUTING} ` +
    `conv_per_s=${Math.round((n / elapsedMs) * 1000)} ` +
    `us_per_step=${Math.round((elapsedMs * 1000) / (n * STEPS_PER_CONVERSATION))} ` +
    `p50_ms=${percentile(latencies, 50).toFixed(1)} p99_ms=${percentile(latencies, 99).toFixed(1)}`
  );
}

async function main(): Promise<void> {
  const unavailable = await pgUnavailable();
  if (unavailable) {
    process.stdout.write(`bench:cluster skipped: ${unavailable}\n`);
    return;
  }
  for (const count of INSTANCES) {
    const db = await freshDatabase();
    const nodes = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        startInstance({ id: `bench-${i + 1}`, databaseUrl: db.url }),
      ),
    );
    try {
      process.stdout.write(`${await runLevel(nodes.map((n) => n.url))}\n`);
    } finally {
      await Promise.all(nodes.map((n) => n.kill('SIGTERM')));
      await db.drop();
    }
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
