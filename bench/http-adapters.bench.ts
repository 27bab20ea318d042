/**
 * npm run bench:http
 *
 * Nest's Express adapter (the product's) against its Fastify adapter, with nothing else in the request: a
 * global guard, a JSON body and a conversation-sized JSON answer (bench/servers/http-adapter.server.ts). The
 * server runs in a child process; the line gives its CPU per request and per step (a conversation of
 * `npm run bench` is one request of 4 steps), so the gain a switch could bring is one subtraction.
 * Rounds alternate the adapters (the machine is shared). Env: REQUESTS (default 4000), CLIENTS (50), ROUNDS (2).
 */
import { performance } from 'node:perf_hooks';
import { percentile, STEPS_PER_CONVERSATION } from './support/load-generator';
import { startServerProcess } from './support/server-process';

const REQUESTS = Number(process.env.REQUESTS ?? 4000);
const CLIENTS = Number(process.env.CLIENTS ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 2);

async function measure(adapter: string): Promise<string> {
  process.env.HTTP_ADAPTER = adapter; // the child inherits the environment
  const server = await startServerProcess('servers/http-adapter.server.ts');
  try {
    const send = async () => {
      const res = await fetch(`${server.baseUrl}/v1/agents/agent-1/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer bench-key' },
        body: JSON.stringify({ messages: [{ role: 'user', content: 'find it' }] }),
      });
      const body = (await res.json()) as { usage?: { step_count?: number } };
      if (res.status !== 201 && res.status !== 200) throw new Error(`status ${res.status}`);
      if (body.usage?.step_count !== STEPS_PER_CONVERSATION) throw new Error('unexpected answer');
    };
    for (let i = 0; i < 200; i++) await send(); // warm-up: JIT, connection pool
    const latencies: number[] = [];
    let next = 0;
    const before = (await server.usage()).cpuUs;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (next < REQUESTS) {
          next++;
          const t0 = performance.now();
          await send();
          latencies.push(performance.now() - t0);
        }
      }),
    );
    const elapsed = performance.now() - started;
    const after = await server.usage();
    latencies.sort((a, b) => a - b);
    const cpuPerRequest = (after.cpuUs - before) / latencies.length;
    return (
      `adapter=${adapter} clients=${CLIENTS} req_per_s=${Math.round((latencies.length / elapsed) * 1000)} ` +
      `server_cpu_us_per_request=${Math.round(cpuPerRequest)} ` +
      `server_cpu_us_per_step=${Math.round(cpuPerRequest / STEPS_PER_CONVERSATION)} ` +
      `p50_ms=${percentile(latencies, 50).toFixed(2)} p99_ms=${percentile(latencies, 99).toFixed(2)} ` +
      `rss_mb=${Math.round(after.rssMb)}`
    );
  } finally {
    await server.close();
  }
}

async function main() {
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? ['express', 'fastify'] : ['fastify', 'express'];
    for (const adapter of order) process.stdout.write(`${await measure(adapter)}\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
