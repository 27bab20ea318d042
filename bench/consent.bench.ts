/**
 * npm run bench:consent
 *
 * 100 agents (offline `scripted` model) each call an http tool that needs consent, so 100 runs are parked with
 * 100 consent requests pending at once. One WebSocket client then approves all of them together. For each
 * decision the server's own latency is measured from the decision frame arriving at the server-side socket
 * to the tool starting (its HTTP request reaching the tool server, a process of its own so that its work
 * is not counted as the server's): stored decision, listener, continuation run queued and started, consent
 * re-check, tool invocation. Also reports the broker's own part: frame in -> decision durably stored and the
 * decision listener called, and this process's CPU time (the server and the WebSocket client) per decision
 * over the decision phase. Prints one line.
 *
 * TOOL_DELAY_MS=<ms>: the tool answers after that long, so the measured phase holds the resumptions' way to
 * the tool alone (the rest of each run comes after it).
 *
 * BENCH_CPU_PROF=<path>: writes <path>.cpuprofile, a V8 CPU profile of the measured decision phases only
 * (read it with bench/profile-buckets.ts).
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import * as path from 'node:path';
import type { RawData, WebSocket as ServerSocket } from 'ws';
import WebSocket from 'ws';
import { ConsentGateway } from '../src/permissions/consent.gateway';
import { PermissionBrokerService } from '../src/permissions/permission-broker.service';
import { startApp } from '../test/support/app-harness';

const PENDING = Number(process.env.PENDING ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const CPU_PROF = process.env.BENCH_CPU_PROF;

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function post(base: string, path: string, body: unknown): Promise<{ id: string }> {
  const res = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string };
}

async function main(): Promise<void> {
  // the tool: stamps when each call starts (by tool_call_id)
  const toolStarted = new Map<string, number>();
  let onToolCall: (() => void) | null = null;
  const tool = fork(path.join(__dirname, 'servers', 'tool.server.ts'), [], {
    execArgv: ['-r', 'ts-node/register/transpile-only'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const toolUrl = await new Promise<string>((resolve) => {
    tool.on('message', (m: { listening: string } | { toolCallId: string; at: number }) => {
      if ('listening' in m) return resolve(m.listening);
      toolStarted.set(m.toolCallId, m.at);
      onToolCall?.();
    });
  });
  // the clock shared with the tool's process
  const now = () => performance.timeOrigin + performance.now();

  const t = await startApp();
  const base = t.baseUrl;
  const gateway = t.app.get(ConsentGateway);
  const frameIn = new Map<string, number>();
  const decided = new Map<string, number>();
  t.app.get(PermissionBrokerService).onDecision((e) => {
    decided.set(e.requestId, now());
  });
  gateway.server.on('connection', (sock: ServerSocket) => {
    // before the gateway's own handler: the moment the frame is in the server
    sock.prependListener('message', (data: RawData) => {
      const at = now();
      const m = /"request_id":"([^"]+)"/.exec((data as Buffer).toString('utf8'));
      if (m) frameIn.set(m[1], at);
    });
  });

  await post(base, '/v1/tools/', {
    name: 'pay',
    description: 'Pays',
    safety: 'side_effecting',
    kind: 'http',
    parameters: { type: 'object', properties: { amount: { type: 'number' } } },
    http: { url: toolUrl, method: 'POST', timeout_ms: 10_000 },
  });

  const ws = new WebSocket(base.replace('http', 'ws') + '/v1/ws');
  const requests: { id: string; tool_call_id: string; run_id: string }[] = [];
  let onRequest: (() => void) | null = null;
  let onParked: (() => void) | null = null;
  ws.on('message', (data) => {
    const f = JSON.parse((data as Buffer).toString('utf8')) as {
      type: string;
      event?: string;
      request?: { id: string; tool_call_id: string; run_id: string };
      data?: { stop_reason?: string };
    };
    if (f.type === 'consent.request' && f.request) {
      requests.push(f.request);
      onRequest?.();
    }
    if (f.event === 'run.completed' && f.data?.stop_reason === 'requires_approval') onParked?.();
  });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ type: 'subscribe' }));

  const session = new Session();
  const inspect = (method: string) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, (err, res) => (err ? reject(err) : resolve(res))),
    );
  if (CPU_PROF) {
    session.connect();
    await inspect('Profiler.enable');
    // 100 µs: a decision's way to the tool is about a millisecond
    await new Promise((resolve, reject) =>
      session.post('Profiler.setSamplingInterval', { interval: 100 }, (err) =>
        err ? reject(err) : resolve(undefined),
      ),
    );
  }
  const latencies: number[] = [];
  const storeLatencies: number[] = [];
  const cpuUs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    requests.length = 0;
    const allPending = new Promise<void>((resolve) => {
      onRequest = () => requests.length === PENDING && resolve();
    });
    // decisions come once every run has parked (a person answers later than the request appears)
    let parkedCount = 0;
    const allParked = new Promise<void>((resolve) => {
      onParked = () => ++parkedCount === PENDING && resolve();
    });
    await Promise.all(
      Array.from({ length: PENDING }, async (_, i) => {
        const agent = await post(base, '/v1/agents/', {
          name: `bench-${round}-${i}-${randomUUID().slice(0, 8)}`,
          model: 'scripted/bench',
          tools: ['pay'],
          tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
          model_script: [{ tool_calls: [{ name: 'pay', arguments: { amount: i } }] }],
        });
        await post(base, `/v1/agents/${agent.id}/messages/async`, {
          messages: [{ role: 'user', content: 'pay' }],
        });
      }),
    );
    await allPending;
    await allParked;

    const pending = [...requests];
    const toolsDone = new Promise<void>((resolve) => {
      onToolCall = () => pending.every((r) => toolStarted.has(r.tool_call_id)) && resolve();
    });
    // the runs ended: the next round and the close do not overlap with this round's tails
    const parkedRuns = new Set(pending.map((r) => r.run_id));
    const runsEnded = new Promise<void>((resolve) => {
      let ended = 0;
      ws.on('message', function onEnd(data) {
        const f = JSON.parse((data as Buffer).toString('utf8')) as {
          type: string;
          event?: string;
          run_id?: string;
        };
        if (
          f.type === 'run.event' &&
          f.event === 'run.completed' &&
          !parkedRuns.has(f.run_id!) &&
          ++ended === PENDING
        ) {
          ws.off('message', onEnd);
          resolve();
        }
      });
    });
    if (CPU_PROF && round > 0) await inspect('Profiler.start');
    const cpuBefore = process.cpuUsage();
    for (const r of pending)
      ws.send(
        JSON.stringify({ type: 'consent.decision', request_id: r.id, decision: 'approve_once' }),
      );
    await toolsDone;
    const cpu = process.cpuUsage(cpuBefore);
    if (CPU_PROF && round > 0) {
      const { profile } = (await inspect('Profiler.stop')) as { profile: unknown };
      writeFileSync(`${CPU_PROF}.round${round}.cpuprofile`, JSON.stringify(profile));
    }
    await runsEnded;
    // the first round warms up the JIT and the statement caches
    if (round > 0)
      for (const r of pending) {
        latencies.push(toolStarted.get(r.tool_call_id)! - frameIn.get(r.id)!);
        storeLatencies.push(decided.get(r.id)! - frameIn.get(r.id)!);
      }
    if (round > 0) cpuUs.push((cpu.user + cpu.system) / pending.length);
  }

  ws.close();
  await t.close();
  tool.disconnect();
  const sorted = latencies.sort((a, b) => a - b);
  const stored = storeLatencies.sort((a, b) => a - b);
  const ms = (v: number) => v.toFixed(2);
  console.log(
    `pending=${PENDING} decisions=${sorted.length} p50_ms=${ms(percentile(sorted, 50))} p99_ms=${ms(percentile(sorted, 99))} max_ms=${ms(sorted[sorted.length - 1])} (decision frame in -> tool start) stored_p50_ms=${ms(percentile(stored, 50))} stored_p99_ms=${ms(percentile(stored, 99))} (-> decision stored, listener called) process_cpu_ms_per_decision=${ms(cpuUs.reduce((a, b) => a + b, 0) / cpuUs.length / 1000)}`,
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
