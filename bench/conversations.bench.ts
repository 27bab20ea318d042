/**
 * npm run bench
 *
 * Drives conversations through the HTTP API against the real app (SQLite file, every message persisted) with
 * the offline `scripted` model. The app runs in a child process (bench/servers/app.server.ts); this process is
 * only the load generator (bench/support/load-generator.ts). Each conversation: a user message, 3 tool calls
 * over 3 model calls and a final answer (4 model calls = 4 steps). One line per concurrency:
 *   clients=50 conv_per_s=820 us_per_step=240 server_cpu_us_per_step=150 p50_ms=55 p99_ms=140 rss_mb=180 rss_peak_mb=190
 * us_per_step is wall time divided by the steps completed (throughput, all clients together);
 * server_cpu_us_per_step is the server process's CPU time (user + system) divided by the same steps;
 * rss_mb is the server's RSS when the level ends, rss_peak_mb the highest sampled (every 50 ms) during it.
 * With HISTORY=2000 each agent starts with 2,000 messages and the lines carry `history=2000`.
 * Then the issue-10 targets at 50 clients, each marked met or not.
 * Env: WARMUP conversations before each level's measured ones (default 4000), CONVERSATIONS measured
 * (default 2000), CLIENTS (default "1,50"), HISTORY (default 0).
 */
import { benchServer, LevelResult } from './support/load-generator';

function printTargets(results: LevelResult[]): void {
  const at50 = results.find((r) => r.clients === 50);
  if (!at50) return;
  const check = (name: string, value: number, limit: number) =>
    `${name}=${Math.round(value)} target<=${limit} ${value <= limit ? 'met' : 'NOT MET'}`;
  process.stdout.write(
    `targets clients=50${at50.history ? ` history=${at50.history}` : ''}: ` +
      [
        check('server_cpu_us_per_step', at50.serverCpuUsPerStep, 150),
        check('us_per_step', at50.usPerStep, 300),
        check('rss_mb', at50.rssMb, 200),
      ].join('; ') +
      ' (floor ratio <=1.5 and history ratio <=1.15: compare with bench:floor and HISTORY=2000 from the same sitting)\n',
  );
}

benchServer('servers/app.server.ts')
  .then(printTargets)
  .catch((e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
  });
