/* eslint-disable @typescript-eslint/no-explicit-any -- frames and response bodies are free-form JSON that tests inspect */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { CLOCK } from '../../src/common/clock';
import type { ConsentCheckRequest, ConsentPort } from '../../src/core/executor/contracts';
import { PermissionBrokerService } from '../../src/permissions/permission-broker.service';
import { CONSENT_PORT } from '../../src/rules/tokens';
import type { TestApp } from '../support/app-harness';

/** A real `ws` client that records every frame and can wait for one (no sleeps: it resolves on arrival). */
export class WsClient {
  readonly frames: any[] = [];
  private waiters: { pred: (f: any) => boolean; resolve: (f: any) => void; from: number }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const f = JSON.parse((data as Buffer).toString('utf8'));
      this.frames.push(f);
      this.waiters = this.waiters.filter((w) => {
        if (w.pred(f)) {
          w.resolve(f);
          return false;
        }
        return true;
      });
    });
  }

  static connect(baseUrl: string, opts: { key?: string; query?: boolean } = {}): Promise<WsClient> {
    const url =
      baseUrl.replace(/^http/, 'ws') +
      '/v1/ws' +
      (opts.key && opts.query ? `?token=${opts.key}` : '');
    const headers = opts.key && !opts.query ? { Authorization: `Bearer ${opts.key}` } : undefined;
    const ws = new WebSocket(url, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new WsClient(ws)));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  send(frame: unknown): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** The next frame (already received ones included, counted from `from`) matching pred. */
  next(pred: (f: any) => boolean, from = 0, timeoutMs = 5000): Promise<any> {
    const seen = this.frames.slice(from).find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const t = setTimeout(
        () => reject(new Error(`no matching frame; got ${JSON.stringify(this.frames)}`)),
        timeoutMs,
      );
      this.waiters.push({
        pred,
        from,
        resolve: (f) => {
          clearTimeout(t);
          resolve(f);
        },
      });
    });
  }

  /** Sends a frame and waits for the first frame of `type` that arrives after it. */
  async request(frame: unknown, type: string | string[]): Promise<any> {
    const from = this.frames.length;
    const types = Array.isArray(type) ? type : [type];
    this.send(frame);
    return this.next((f) => types.includes(f.type), from);
  }

  async subscribe(agentIds?: string[]): Promise<any> {
    return this.request(
      { type: 'subscribe', ...(agentIds ? { agent_ids: agentIds } : {}) },
      'subscribed',
    );
  }

  /** A ping round trip: every frame sent before it has been handled once the pong arrives. */
  async sync(): Promise<void> {
    await this.request({ type: 'ping' }, 'pong');
  }

  ofType(type: string): any[] {
    return this.frames.filter((f) => f.type === type);
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.once('close', () => resolve());
      this.ws.close();
    });
  }
}

export const newAgentId = () => `agent-${randomUUID()}`;

let calls = 0;
/** A consent check as the executor makes it; defaults for everything. */
export function aCheck(over: Partial<ConsentCheckRequest> = {}): ConsentCheckRequest {
  calls++;
  return {
    tenantId: 'default',
    agentId: over.agentId ?? newAgentId(),
    runId: `run-${randomUUID()}`,
    batchId: String(1000 + calls),
    toolCallId: `call_${calls}_${randomUUID().slice(0, 8)}`,
    toolName: 'pay',
    arguments: { amount: 50 },
    scope: 'pay',
    timeoutMs: 300_000,
    ...over,
  };
}

export const port = (t: TestApp) => t.app.get<ConsentPort>(CONSENT_PORT);
export const broker = (t: TestApp) => t.app.get(PermissionBrokerService);

/** Pins the app's CLOCK (the same instance every provider uses) and lets a test move it. */
export function fakeClock(t: TestApp, start = Date.now()) {
  const clock = t.app.get<{ now(): number }>(CLOCK);
  let now = start;
  const spy = jest.spyOn(clock, 'now').mockImplementation(() => now);
  return {
    get now() {
      return now;
    },
    advance(ms: number) {
      now += ms;
    },
    restore: () => spy.mockRestore(),
  };
}

export async function api(
  t: TestApp,
  method: string,
  path: string,
  body?: unknown,
  key?: string,
): Promise<{ status: number; body: any }> {
  const res = await fetch(t.baseUrl + path, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** An http tool's server on 127.0.0.1: records each call's JSON body ("the tool ran" = it got the request). */
export async function startToolServer(): Promise<{
  url: string;
  calls: { path: string | undefined; body: any }[];
  close(): Promise<void>;
}> {
  const calls: { path: string | undefined; body: any }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      calls.push({ path: req.url, body: JSON.parse(Buffer.concat(chunks).toString() || '{}') });
      res.setHeader('content-type', 'application/json');
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
