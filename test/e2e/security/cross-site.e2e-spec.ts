/* eslint-disable @typescript-eslint/no-explicit-any -- frames and bodies are free-form JSON that tests inspect */
import { readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import * as path from 'node:path';
import WebSocket from 'ws';
import { startApp, TestApp } from '../../support/app-harness';
import { aCheck, api, newAgentId, port } from '../consent-helpers';

const EVIL = 'http://evil.example';

/** A WebSocket upgrade with these headers: the socket once open, or the refused upgrade's status and body. */
function upgrade(
  t: TestApp,
  headers: Record<string, string>,
  query = '',
): Promise<{ ws: WebSocket } | { status: number; body: any }> {
  const ws = new WebSocket(`${t.baseUrl.replace(/^http/, 'ws')}/v1/ws${query}`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* a plain text refusal (401) */
        }
        resolve({ status: res.statusCode!, body });
      });
    });
    ws.once('error', reject);
  });
}

/** Every frame the socket gets for `ms` after sending `frames` (what an attacker's page would read). */
async function framesAfter(ws: WebSocket, frames: object[], ms = 300): Promise<any[]> {
  const got: any[] = [];
  ws.on('message', (d) => got.push(JSON.parse((d as Buffer).toString('utf8'))));
  for (const f of frames) ws.send(JSON.stringify(f));
  await new Promise((r) => setTimeout(r, ms));
  ws.close();
  return got;
}

/** An HTTP request with a chosen Host header (fetch will not send one). */
function raw(
  t: TestApp,
  method: string,
  urlPath: string,
  headers: Record<string, string>,
  body?: Buffer | string,
): Promise<{ status: number; body: any }> {
  const url = new URL(t.baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: urlPath, headers },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Letta's own agent file (its python tools make the import fail with 400, after the origin check). */
const agentFile = () =>
  readFileSync(path.join(__dirname, '..', '..', 'fixtures', 'letta', 'basic-agent-v2.af'));

async function pendingRequest(t: TestApp): Promise<string> {
  const c = await port(t).check(aCheck({ agentId: newAgentId() }));
  expect(c.kind).toBe('pending');
  return (c as { requestId: string }).requestId;
}

/**
 * QA (cross-site WebSocket hijacking): in open mode (no API keys, the default) any web page in a browser on
 * the machine could open ws://127.0.0.1:<port>/v1/ws, subscribe, read the pending consent requests and
 * approve them. A browser lets a page open a WebSocket to any host and sends the page's Origin; only the
 * server's own pages (and server.allowed_origins) may now, and, listening on the loopback, only under an
 * address, localhost or server.allowed_hosts (a rebound DNS name is refused).
 */
describe('security: a web page of another origin gets nothing (open mode)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  it('an attacker page opening /v1/ws (Origin: http://evil.example) is refused at the upgrade: 403, no socket, the request stays pending', async () => {
    const requestId = await pendingRequest(t);
    const refused = await upgrade(t, { Origin: EVIL });
    expect(refused).toEqual({
      status: 403,
      body: expect.objectContaining({
        code: 'ORIGIN_NOT_ALLOWED',
        message: expect.stringContaining('server.allowed_origins'),
      }),
    });
    // the same attack with the Origin spelled as the browser sends a sandboxed frame's
    expect(await upgrade(t, { Origin: 'null' })).toMatchObject({ status: 403 });
    // a page on another port of the same machine is another origin too
    const otherPort = `http://127.0.0.1:${Number(new URL(t.baseUrl).port) + 1}`;
    expect(await upgrade(t, { Origin: otherPort })).toMatchObject({ status: 403 });
    const r = await api(t, 'GET', `/v1/consent/requests/${requestId}`);
    expect(r.body.status).toBe('pending');
  });

  it("the server's own page (same origin) and a client without an Origin (SDK, CLI) still connect and decide", async () => {
    const own = await upgrade(t, { Origin: t.baseUrl });
    expect(own).toHaveProperty('ws');
    const sdk = await upgrade(t, {});
    expect(sdk).toHaveProperty('ws');
    (sdk as { ws: WebSocket }).ws.close();
    const requestId = await pendingRequest(t);
    const frames = await framesAfter((own as { ws: WebSocket }).ws, [
      { type: 'subscribe' },
      { type: 'consent.decision', request_id: requestId, decision: 'deny' },
    ]);
    expect(frames.map((f) => f.type)).toEqual(
      expect.arrayContaining(['subscribed', 'consent.request', 'consent.resolved']),
    );
  });

  it('DNS rebinding: listening on the loopback, a request under any other name is refused (reads, the WebSocket), an address or localhost answers', async () => {
    for (const h of ['localhost', '127.0.0.1', '[::1]', 'console.localhost'])
      expect((await raw(t, 'GET', '/v1/agents/', { Host: `${h}:8283` })).status).toBe(200);
    // the attacker's page, its name now resolving to 127.0.0.1: same origin as far as the browser knows
    const read = await raw(t, 'GET', '/v1/agents/', { Host: 'evil.example:8283' });
    expect(read).toEqual({
      status: 403,
      body: expect.objectContaining({
        code: 'HOST_NOT_ALLOWED',
        message: expect.stringContaining('server.allowed_hosts'),
        details: { setting: 'server.allowed_hosts' },
      }),
    });
    const requestId = await pendingRequest(t);
    const ws = await upgrade(t, { Host: 'evil.example:8283', Origin: 'http://evil.example:8283' });
    expect(ws).toMatchObject({ status: 403, body: { code: 'HOST_NOT_ALLOWED' } });
    expect((await api(t, 'GET', `/v1/consent/requests/${requestId}`)).body.status).toBe('pending');
  });

  it('REST: a cross-site form POST (multipart import, a bodiless POST) is refused with 403 before it runs; reads stay unreadable to the page and answer', async () => {
    const before = (await api(t, 'GET', '/v1/tools/')).body.length;
    const form = new FormData();
    form.append('file', new Blob([agentFile()]), 'agent.af');
    const imported = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      body: form,
      headers: { origin: EVIL },
    });
    expect(imported.status).toBe(403);
    expect(await imported.json()).toMatchObject({ code: 'ORIGIN_NOT_ALLOWED' });
    const bodiless = await fetch(`${t.baseUrl}/v1/tools/add-base-tools`, {
      method: 'POST',
      headers: { origin: EVIL },
    });
    expect(bodiless.status).toBe(403);
    expect((await api(t, 'GET', '/v1/tools/')).body.length).toBe(before);
    // text/plain and form bodies were never parsed, and JSON needs a preflight nobody answers: still so
    const plain = await fetch(`${t.baseUrl}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: '{"name":"csrf"}',
    });
    expect(plain.status).toBe(400);
    const preflight = await fetch(`${t.baseUrl}/v1/agents/`, {
      method: 'OPTIONS',
      headers: { origin: EVIL, 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    // a GET with a foreign Origin answers (the browser hides it from the page)
    expect((await fetch(`${t.baseUrl}/v1/agents/`, { headers: { origin: EVIL } })).status).toBe(
      200,
    );
    // the server's own page posts as before
    const own = await fetch(`${t.baseUrl}/v1/tools/add-base-tools`, {
      method: 'POST',
      headers: { origin: t.baseUrl },
    });
    expect(own.status).toBe(200);
  });
});

describe('security: the operator opens the server to named origins', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      overrides: {
        server: { allowed_origins: ['https://app.example.com'] },
      },
    });
  });
  afterAll(() => t.close());

  it('an allowed origin connects; another is still refused', async () => {
    const ok = await upgrade(t, { Origin: 'https://app.example.com' });
    expect(ok).toHaveProperty('ws');
    (ok as { ws: WebSocket }).ws.close();
    expect(await upgrade(t, { Origin: 'https://app.example.com.evil.example' })).toMatchObject({
      status: 403,
    });
    expect(await upgrade(t, { Origin: 'http://app.example.com' })).toMatchObject({ status: 403 });
  });

  it('a bad allow-list entry stops the boot naming it', async () => {
    await expect(startApp({ overrides: { server: { allowed_origins: ['*'] } } })).rejects.toThrow(
      /server\.allowed_origins\[0\]/,
    );
    await expect(
      startApp({ overrides: { server: { allowed_origins: ['https://app.example.com/path'] } } }),
    ).rejects.toThrow(/server\.allowed_origins\[0\]/);
  });
});

describe('security: open mode under names the operator gives', () => {
  let named: TestApp;
  let wide: TestApp;
  beforeAll(async () => {
    named = await startApp({
      overrides: {
        server: { allowed_hosts: ['agents.example.com', '*.internal'] },
        webhooks: { public_url: 'https://hooks.example.net/base' },
      },
    });
    wide = await startApp({ overrides: { server: { host: '0.0.0.0' } } });
  });
  afterAll(async () => {
    await named.close();
    await wide.close();
  });

  it('server.allowed_hosts and the public URL answer, other names do not; beyond the loopback with no names set, any name answers', async () => {
    for (const h of ['agents.example.com', 'box.internal:8283', 'hooks.example.net', '127.0.0.1'])
      expect((await raw(named, 'GET', '/v1/agents/', { Host: h })).status).toBe(200);
    for (const h of ['evil.example', 'agents.example.com.evil.example'])
      expect((await raw(named, 'GET', '/v1/agents/', { Host: h })).status).toBe(403);
    for (const h of ['agent-server', 'box.lan:8283'])
      expect((await raw(wide, 'GET', '/v1/agents/', { Host: h })).status).toBe(200);
  });

  it('a bad name stops the boot naming it', async () => {
    for (const bad of ['https://agents.example.com', 'agents.example.com:8283', '10.0.0.0/8', '*'])
      await expect(startApp({ overrides: { server: { allowed_hosts: [bad] } } })).rejects.toThrow(
        /server\.allowed_hosts\[0\]/,
      );
  });
});

describe('security: with API keys, the key decides (a page of another origin holds none)', () => {
  let t: TestApp;
  const key = 'sk-team-a-0123456789';
  beforeAll(async () => {
    t = await startApp({ overrides: { auth: { api_keys: [{ key, tenant: 'team-a' }] } } });
  });
  afterAll(() => t.close());

  it('no key, no socket, whatever the Origin; with the key any Origin and Host answer (no key, no data)', async () => {
    expect(await upgrade(t, { Origin: EVIL })).toMatchObject({ status: 401 });
    const other = await upgrade(t, { Origin: EVIL }, `?token=${key}`);
    expect(other).toHaveProperty('ws');
    (other as { ws: WebSocket }).ws.close();
    expect(await upgrade(t, { Origin: t.baseUrl }, '?token=wrong')).toMatchObject({ status: 401 });
    const own = await upgrade(t, { Origin: t.baseUrl }, `?token=${key}`);
    expect(own).toHaveProperty('ws');
    (own as { ws: WebSocket }).ws.close();
    expect(
      (
        await raw(t, 'GET', '/v1/agents/', {
          Host: 'agents.example.com',
          authorization: `Bearer ${key}`,
        })
      ).status,
    ).toBe(200);
    expect((await raw(t, 'GET', '/v1/agents/', { Host: 'agents.example.com' })).status).toBe(401);
  });
});
