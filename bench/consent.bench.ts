/**
 * npm run bench:consent
 *
 * 100 consent requests pending at once, one WebSocket client answers all of them concurrently. Measures the
 * server's own latency per decision: from the decision frame arriving at the server-side socket to the
 * decision being durably stored and the decision listener (the processor's resume hook) being invoked.
 * Prints one line: `pending=100 p50_ms=… p99_ms=… max_ms=… measured=frame_in_to_stored_and_listener`.
 */
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import type { RawData, WebSocket as ServerSocket } from 'ws';
import WebSocket from 'ws';
import { CONSENT_PORT } from '../src/rules/tokens';
import type { ConsentPort } from '../src/core/executor/contracts';
import { PermissionBrokerService } from '../src/permissions/permission-broker.service';
import { ConsentGateway } from '../src/permissions/consent.gateway';
import { startApp } from '../test/support/app-harness';

const PENDING = Number(process.env.PENDING ?? 100);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const t = await startApp();
  const port = t.app.get<ConsentPort>(CONSENT_PORT);
  const broker = t.app.get(PermissionBrokerService);
  const gateway = t.app.get(ConsentGateway);

  const arrived = new Map<string, number>();
  const latencies: number[] = [];
  let onAll: (() => void) | null = null;
  let expected = 0;
  broker.onDecision((e) => {
    const t0 = arrived.get(e.requestId);
    if (t0 === undefined) return;
    latencies.push(performance.now() - t0);
    if (--expected === 0) onAll?.();
  });
  // stamp each decision frame the moment the server-side socket receives it, before the gateway's handler
  gateway.server.on('connection', (sock: ServerSocket) => {
    sock.prependListener('message', (data: RawData) => {
      const now = performance.now();
      const text = (data as Buffer).toString('utf8');
      const m = /"request_id":"([^"]+)"/.exec(text);
      if (m) arrived.set(m[1], now);
    });
  });

  const ws = new WebSocket(t.baseUrl.replace('http', 'ws') + '/v1/ws');
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });

  for (let round = 0; round < ROUNDS; round++) {
    const agentId = `agent-${randomUUID()}`;
    const ids: string[] = [];
    for (let i = 0; i < PENDING; i++) {
      const res = await port.check({
        tenantId: 'default',
        agentId,
        runId: `run-${randomUUID()}`,
        batchId: String(round),
        toolCallId: `call_${round}_${i}`,
        toolName: 'pay',
        arguments: { amount: i },
        scope: 'pay',
        timeoutMs: 300_000,
      });
      if (res.kind !== 'pending') throw new Error(`expected pending, got ${res.kind}`);
      ids.push(res.requestId);
    }
    expected = PENDING;
    const done = new Promise<void>((resolve) => (onAll = resolve));
    for (const id of ids)
      ws.send(JSON.stringify({ type: 'consent.decision', request_id: id, decision: i(id) }));
    await done;
  }

  ws.close();
  await t.close();
  // the first round warms the JIT and the statement cache: report the rest
  const measured = latencies.slice(PENDING).sort((a, b) => a - b);
  console.log(
    `pending=${PENDING} rounds=${ROUNDS - 1} p50_ms=${percentile(measured, 50).toFixed(2)} p99_ms=${percentile(measured, 99).toFixed(2)} max_ms=${measured[measured.length - 1].toFixed(2)} measured=frame_in_to_stored_and_listener`,
  );
}

/** Alternate the decisions so both the approve and the deny path are measured. */
function i(id: string): string {
  return id.charCodeAt(id.length - 1) % 2 ? 'approve_once' : 'deny';
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
