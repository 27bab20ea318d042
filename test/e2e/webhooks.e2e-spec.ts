/* eslint-disable @typescript-eslint/no-explicit-any -- deliveries and response bodies are free-form JSON that tests inspect */
import { createHmac } from 'node:crypto';
import { rmSync } from 'node:fs';
import { createServer, IncomingHttpHeaders } from 'node:http';
import { AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import { sqlTable } from '../../src/database/sql-names';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher.service';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { aCheck, api, broker, fakeClock, newAgentId, port } from './consent-helpers';

const KEYS = {
  auth: {
    api_keys: [
      { key: 'sk-a', tenant: 'team-a' },
      { key: 'sk-b', tenant: 'team-b' },
    ],
  },
  quotas: { webhooks: 3 },
  webhooks: { retry_base_seconds: 30, max_attempts: 3 },
};

interface Received {
  headers: IncomingHttpHeaders;
  raw: string;
  body: any;
}

/**
 * A webhook receiver on `host`: records each POST and answers the next queued status (200 when none),
 * or a 302 to `redirect.to` when set.
 */
async function startReceiver(host = '127.0.0.1') {
  const got: Received[] = [];
  const statuses: number[] = [];
  const redirect: { to: string | null } = { to: null };
  let waiters: { n: number; resolve: () => void }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      got.push({ headers: req.headers, raw, body: JSON.parse(raw) });
      if (redirect.to) res.writeHead(302, { location: redirect.to });
      else res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
      waiters = waiters.filter((w) => (got.length >= w.n ? (w.resolve(), false) : true));
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    url: `http://${host}:${(server.address() as AddressInfo).port}/hook`,
    got,
    statuses,
    redirect,
    /** Resolves once `n` requests have arrived in all. */
    count: (n: number) =>
      got.length >= n
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

type Receiver = Awaited<ReturnType<typeof startReceiver>>;

describe('webhooks', () => {
  let t: TestApp;
  let rx: Receiver;
  let fake: FakeModelServer;
  const hooks: { id: string; key: string }[] = [];

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      // one grant per agent: the decision URL's GRANT_LIMIT refusal below
      overrides: { ...KEYS, consent: { max_active_grants_per_agent: 1 } },
      modelBaseUrl: fake.baseUrl,
    });
  });
  beforeEach(async () => {
    rx = await startReceiver();
  });
  afterEach(async () => {
    for (const h of hooks.splice(0))
      await api(t, 'DELETE', `/v1/webhooks/${h.id}`, undefined, h.key);
    await rx.close();
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });

  const dispatcher = () => t.app.get(WebhookDispatcher);

  async function aWebhook(key: string, events: string[], url = rx.url, secret?: string) {
    const res = await api(t, 'POST', '/v1/webhooks', { url, events, secret }, key);
    expect(res.status).toBe(201);
    hooks.push({ id: res.body.id, key });
    return res.body;
  }

  const tenantOf = (key: string) => (key === 'sk-a' ? 'team-a' : 'team-b');
  /** A pending consent request of `key`'s tenant, as the executor asks for one. */
  async function aPendingRequest(key: string, timeoutMs = 300_000) {
    const check = aCheck({ tenantId: tenantOf(key), timeoutMs });
    const r = await port(t).check(check);
    expect(r.kind).toBe('pending');
    return { ...check, requestId: (r as { requestId: string }).requestId };
  }

  describe('registration', () => {
    it.each([
      ['no url', { events: ['run.completed'] }, 'url'],
      ['a ftp url', { url: 'ftp://127.0.0.1/x', events: ['run.completed'] }, 'url'],
      [
        'credentials in the url',
        { url: 'http://u:p@127.0.0.1/x', events: ['run.completed'] },
        'url',
      ],
      [
        'a url past url_max_length',
        { url: 'http://a/' + 'x'.repeat(2100), events: ['run.completed'] },
        'url',
      ],
      ['no events', { url: 'http://127.0.0.1/x', events: [] }, 'events'],
      [
        'an unknown event',
        { url: 'http://127.0.0.1/x', events: ['run.completed', 'boom'] },
        'events[1]',
      ],
      [
        'a short secret',
        { url: 'http://127.0.0.1/x', events: ['run.completed'], secret: 'abc' },
        'secret',
      ],
      ['an unknown field', { url: 'http://127.0.0.1/x', events: ['run.completed'], x: 1 }, 'x'],
    ])('refuses %s with 400 at its path', async (_name, body, path) => {
      const res = await api(t, 'POST', '/v1/webhooks', body, 'sk-a');
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.details.problems.map((p: any) => p.path)).toContain(path);
    });

    it.each([
      ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/'],
      ['an IPv4-mapped metadata address', 'http://[::ffff:169.254.169.254]/latest/'],
    ])('the default outbound policy refuses %s: 400 WEBHOOK_HOST_REFUSED', async (_what, url) => {
      const res = await api(t, 'POST', '/v1/webhooks', { url, events: ['run.completed'] }, 'sk-a');
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('WEBHOOK_HOST_REFUSED');
      expect(res.body.message).toMatch(/is denied by the outbound host policy$/);
    });

    it('shows the secret once (a generated one when none is given), never on reads; quotas.webhooks holds', async () => {
      const created = await aWebhook('sk-a', ['run.completed']);
      expect(created.secret).toMatch(/^whsec_/);
      const read = await api(t, 'GET', `/v1/webhooks/${created.id}`, undefined, 'sk-a');
      expect(read.status).toBe(200);
      expect(read.body).not.toHaveProperty('secret');
      expect((await api(t, 'GET', '/v1/webhooks', undefined, 'sk-a')).body).toEqual([read.body]);
      await aWebhook('sk-a', ['run.completed']);
      await aWebhook('sk-a', ['run.completed']);
      const over = await api(
        t,
        'POST',
        '/v1/webhooks',
        { url: rx.url, events: ['run.completed'] },
        'sk-a',
      );
      expect(over.status).toBe(409);
      expect(over.body).toMatchObject({
        code: 'QUOTA_EXCEEDED',
        details: { quota: 'webhooks', limit: 3 },
      });
    });

    it('keeps the secret sealed at rest (AES-256-GCM, bound to the webhook), and signs with it', async () => {
      const secret = 'a-secret-of-sixteen+';
      const hook = await aWebhook('sk-a', ['consent.request'], rx.url, secret);
      const table = sqlTable(t.config.database.schema, 'webhooks');
      const [row] = await t.app
        .get(DataSource)
        .query(`SELECT * FROM ${table} WHERE id = '${hook.id}'`);
      expect(row.secret_sealed).toMatch(/^v1:/);
      expect(JSON.stringify(row)).not.toContain(secret);
      await aPendingRequest('sk-a');
      await rx.count(1);
      const [, ts, v1] = /^t=(\d+),v1=(\w+)$/.exec(
        String(rx.got[0].headers['x-webhook-signature']),
      )!;
      expect(createHmac('sha256', secret).update(`${ts}.${rx.got[0].raw}`).digest('hex')).toBe(v1);
    });

    it('without secrets.encryption_key a webhook cannot be registered: 409 SECRETS_NOT_CONFIGURED', async () => {
      const keyless = await startApp({
        overrides: { ...KEYS, secrets: { generate_key_file: false } },
        env: { SECRETS_ENCRYPTION_KEY: '' },
      });
      try {
        const res = await api(
          keyless,
          'POST',
          '/v1/webhooks',
          { url: rx.url, events: ['run.completed'] },
          'sk-a',
        );
        expect(res.status).toBe(409);
        expect(res.body.code).toBe('SECRETS_NOT_CONFIGURED');
      } finally {
        await keyless.close();
      }
    });

    it("another tenant's webhook is 404 to read, list, delete or see deliveries of", async () => {
      const a = await aWebhook('sk-a', ['run.completed']);
      for (const [m, p] of [
        ['GET', `/v1/webhooks/${a.id}`],
        ['GET', `/v1/webhooks/${a.id}/deliveries`],
        ['DELETE', `/v1/webhooks/${a.id}`],
      ])
        expect((await api(t, m, p, undefined, 'sk-b')).status).toBe(404);
      expect((await api(t, 'GET', '/v1/webhooks', undefined, 'sk-b')).body).toEqual([]);
      expect((await api(t, 'GET', '/v1/webhooks')).status).toBe(401);
    });
  });

  describe('deliveries', () => {
    it('a consent.request delivery is signed: HMAC-SHA256 of "<t>.<body>" with the secret verifies', async () => {
      const secret = 'a-secret-of-sixteen+';
      const hook = await aWebhook('sk-a', ['consent.request'], rx.url, secret);
      const req = await aPendingRequest('sk-a');
      await rx.count(1);
      const { headers, raw, body } = rx.got[0];
      const sig = String(headers['x-webhook-signature']);
      const [, ts, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig)!;
      expect(createHmac('sha256', secret).update(`${ts}.${raw}`).digest('hex')).toBe(v1);
      expect(
        createHmac('sha256', 'a-wrong-secret-xyz').update(`${ts}.${raw}`).digest('hex'),
      ).not.toBe(v1);
      expect(headers['x-webhook-event']).toBe('consent.request');
      expect(body).toMatchObject({
        event: 'consent.request',
        data: {
          request: { id: req.requestId, tool_name: 'pay', arguments: { amount: 50 } },
          decision_url: expect.stringMatching(/\/v1\/webhooks\/decisions\/[A-Za-z0-9_-]{43}$/),
        },
      });
      expect(headers['x-webhook-id']).toBe(body.id);
      await dispatcher().deliverDue(); // the attempt has been recorded once the pass after it ends
      const deliveries = await api(
        t,
        'GET',
        `/v1/webhooks/${hook.id}/deliveries`,
        undefined,
        'sk-a',
      );
      expect(deliveries.body).toEqual([
        expect.objectContaining({
          id: body.id,
          status: 'delivered',
          attempts: 1,
          last_status_code: 200,
        }),
      ]);
    });

    it('retries on 500 with backoff, then records the success', async () => {
      const clock = fakeClock(t);
      try {
        const hook = await aWebhook('sk-a', ['consent.request']);
        rx.statuses.push(500, 503);
        await aPendingRequest('sk-a');
        await rx.count(1);
        await dispatcher().deliverDue(); // the attempt has been recorded once the pass after it ends
        const list = async () =>
          (await api(t, 'GET', `/v1/webhooks/${hook.id}/deliveries`, undefined, 'sk-a')).body[0];
        expect(await list()).toMatchObject({
          status: 'pending',
          attempts: 1,
          last_status_code: 500,
        });

        await dispatcher().deliverDue(); // not due yet: nothing is sent
        expect(rx.got).toHaveLength(1);
        clock.advance(30_000); // retry_base_seconds
        await dispatcher().deliverDue();
        expect(await list()).toMatchObject({
          status: 'pending',
          attempts: 2,
          last_status_code: 503,
        });
        clock.advance(30_000); // the second wait doubles
        await dispatcher().deliverDue();
        expect(rx.got).toHaveLength(2);
        clock.advance(30_000);
        await dispatcher().deliverDue();
        expect(await list()).toMatchObject({
          status: 'delivered',
          attempts: 3,
          last_status_code: 200,
        });
        expect(rx.got).toHaveLength(3);
        // the same body (and id) on every attempt
        expect(new Set(rx.got.map((g) => g.raw)).size).toBe(1);
      } finally {
        clock.restore();
      }
    });

    it('gives up after max_attempts and records the failure', async () => {
      const clock = fakeClock(t);
      try {
        const hook = await aWebhook('sk-a', ['consent.request']);
        rx.statuses.push(500, 500, 500);
        await aPendingRequest('sk-a');
        await rx.count(1);
        for (let i = 0; i < 3; i++) {
          clock.advance(3_600_000);
          await dispatcher().deliverDue();
        }
        const d = (await api(t, 'GET', `/v1/webhooks/${hook.id}/deliveries`, undefined, 'sk-a'))
          .body[0];
        expect(d).toMatchObject({
          status: 'failed',
          attempts: 3,
          last_status_code: 500,
          next_attempt_at: null,
        });
        expect(rx.got).toHaveLength(3);
      } finally {
        clock.restore();
      }
    });

    it('run.completed and run.failed are delivered for finished runs', async () => {
      await aWebhook('sk-a', ['run.completed', 'run.failed']);
      const agent = await api(
        t,
        'POST',
        '/v1/agents/',
        { name: `wh-${Date.now()}`, system: 's' },
        'sk-a',
      );
      const ok = await api(
        t,
        'POST',
        `/v1/agents/${agent.body.id}/messages`,
        {
          messages: [{ role: 'user', content: 'hi' }],
        },
        'sk-a',
      );
      expect(ok.status).toBe(200);
      await rx.count(1);
      expect(rx.got[0].body).toMatchObject({
        event: 'run.completed',
        data: { agent_id: agent.body.id, status: 'completed', stop_reason: 'end_turn' },
      });

      fake.reset();
      fake.push({ status: 400 });
      const failing = await api(
        t,
        'POST',
        '/v1/agents/',
        {
          name: `wh-fail-${Date.now()}`,
          system: 's',
          llm_config: {
            model: 'fake',
            model_endpoint_type: 'openai',
            model_endpoint: fake.baseUrl,
            context_window: 8000,
          },
        },
        'sk-a',
      );
      await api(
        t,
        'POST',
        `/v1/agents/${failing.body.id}/messages`,
        {
          messages: [{ role: 'user', content: 'hi' }],
        },
        'sk-a',
      );
      await rx.count(2);
      expect(rx.got[1].body).toMatchObject({
        event: 'run.failed',
        data: { agent_id: failing.body.id, status: 'failed' },
      });
    });

    it('a webhook deleted after a delivery gets no more, and one added next gets the next (the subscriptions cached on SQLite)', async () => {
      const rxNext = await startReceiver();
      try {
        const gone = await aWebhook('sk-a', ['run.completed']);
        const agent = await api(
          t,
          'POST',
          '/v1/agents/',
          { name: 'wh-stale', system: 's' },
          'sk-a',
        );
        const run = () =>
          api(
            t,
            'POST',
            `/v1/agents/${agent.body.id}/messages`,
            { messages: [{ role: 'user', content: 'hi' }] },
            'sk-a',
          );
        expect((await run()).status).toBe(200);
        await rx.count(1);
        expect((await api(t, 'DELETE', `/v1/webhooks/${gone.id}`, undefined, 'sk-a')).status).toBe(
          200,
        );
        // a run with no webhook left, then one with a new webhook: a stale cache would post to the old one
        expect((await run()).status).toBe(200);
        await aWebhook('sk-a', ['run.completed'], rxNext.url);
        expect((await run()).status).toBe(200);
        await rxNext.count(1);
        await dispatcher().deliverDue();
        expect(rx.got).toHaveLength(1);
      } finally {
        await rxNext.close();
      }
    });

    it("never delivers one tenant's events to another tenant's webhook", async () => {
      const rxB = await startReceiver();
      try {
        await aWebhook(
          'sk-b',
          ['consent.request', 'consent.resolved', 'run.completed', 'run.failed'],
          rxB.url,
        );
        await aWebhook('sk-a', ['consent.request', 'consent.resolved']);
        const a = await aPendingRequest('sk-a');
        await api(
          t,
          'POST',
          `/v1/consent/requests/${a.requestId}/decision`,
          { decision: 'deny' },
          'sk-a',
        );
        await rx.count(2);
        await dispatcher().deliverDue();
        expect(rxB.got).toEqual([]);
        // and B's own event reaches B only
        await aPendingRequest('sk-b');
        await rxB.count(1);
        expect(rxB.got[0].body.data.request.agent_id).toBeDefined();
        expect(rx.got).toHaveLength(2);
      } finally {
        await rxB.close();
      }
    });
  });

  describe('decision URL', () => {
    async function decisionUrlFor(key = 'sk-a', timeoutMs?: number) {
      await aWebhook(key, ['consent.request', 'consent.resolved']);
      const req = await aPendingRequest(key, timeoutMs);
      await rx.count(1);
      return { req, url: rx.got[0].body.data.decision_url as string };
    }
    const post = async (url: string, body: unknown) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };

    it('decides once without an API key, and the decision is recorded as the webhook channel', async () => {
      const { req, url } = await decisionUrlFor();
      const first = await post(url, { decision: 'approve_once', reason: 'ok by chat' });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        id: req.requestId,
        status: 'approved',
        channel: 'webhook',
        decided_by: 'team-a',
      });
      const again = await post(url, { decision: 'deny' });
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('DECISION_URL_USED');
      await rx.count(2);
      expect(rx.got[1].body).toMatchObject({
        event: 'consent.resolved',
        data: { request_id: req.requestId, decision: 'approve_once', channel: 'webhook' },
      });
    });

    it('a body the broker refuses does not spend the URL', async () => {
      const { url } = await decisionUrlFor();
      const bad = await post(url, { decision: 'approve_forever' });
      expect(bad.status).toBe(400);
      expect((await post(url, { decision: 'deny', reason: 'no' })).status).toBe(200);
    });

    it('a 409 GRANT_LIMIT refusal leaves the request pending and does not spend the URL', async () => {
      // QA: the token came back only for VALIDATION_FAILED, so the URL was dead while the request waited
      const agentId = newAgentId();
      const first = await port(t).check(aCheck({ tenantId: 'team-a', agentId }));
      expect(first.kind).toBe('pending');
      const granted = await api(
        t,
        'POST',
        `/v1/consent/requests/${(first as { requestId: string }).requestId}/decision`,
        { decision: 'approve_for_scope' },
        'sk-a',
      );
      expect(granted.status).toBe(200); // the agent's one grant (consent.max_active_grants_per_agent)
      await aWebhook('sk-a', ['consent.request']);
      const second = await port(t).check(
        aCheck({ tenantId: 'team-a', agentId, toolName: 'refund', scope: 'refund' }),
      );
      expect(second.kind).toBe('pending');
      await rx.count(1);
      const url = rx.got[0].body.data.decision_url as string;
      const refused = await post(url, { decision: 'approve_for_scope' });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('GRANT_LIMIT');
      const again = await post(url, { decision: 'approve_once' });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'approved', channel: 'webhook' });
      expect((await post(url, { decision: 'deny' })).body.code).toBe('DECISION_URL_USED');
    });

    it('loses to a decision made first elsewhere (409 ALREADY_RESOLVED)', async () => {
      const { req, url } = await decisionUrlFor();
      expect(
        (
          await api(
            t,
            'POST',
            `/v1/consent/requests/${req.requestId}/decision`,
            { decision: 'deny' },
            'sk-a',
          )
        ).status,
      ).toBe(200);
      const late = await post(url, { decision: 'approve_once' });
      expect(late.status).toBe(409);
      expect(late.body.code).toBe('ALREADY_RESOLVED');
    });

    it('expires with the request: 410 DECISION_URL_EXPIRED, and the request is denied by timeout', async () => {
      const clock = fakeClock(t);
      try {
        const { req, url } = await decisionUrlFor('sk-a', 60_000);
        clock.advance(60_001);
        const late = await post(url, { decision: 'approve_once' });
        expect(late.status).toBe(410);
        expect(late.body.code).toBe('DECISION_URL_EXPIRED');
        await broker(t).expireDue(clock.now);
        const r = await api(t, 'GET', `/v1/consent/requests/${req.requestId}`, undefined, 'sk-a');
        expect(r.body).toMatchObject({ status: 'denied', decision_reason: 'timeout' });
      } finally {
        clock.restore();
      }
    });

    it.each([
      ['a malformed token', 'nope'],
      ['an unknown token', 'A'.repeat(43)],
    ])('%s is 404', async (_name, token) => {
      const res = await post(`${t.baseUrl}/v1/webhooks/decisions/${token}`, { decision: 'deny' });
      expect(res.status).toBe(404);
    });
  });
});

/**
 * A hostile tenant aims its webhooks at the server's own network. The operator's outbound policy (the
 * http tools' `tools.http.denied_hosts`) closes loopback here; the tenant's own receiver sits on 127.0.0.2.
 */
describe('webhooks: the outbound host policy against a hostile tenant', () => {
  let t: TestApp;
  let rx: Receiver;
  let internal: Receiver;
  const dns = jest.requireActual<typeof import('node:dns')>('node:dns');

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        ...KEYS,
        tools: { http: { denied_hosts: ['127.0.0.1', '::1', '169.254.0.0/16', 'fd00:ec2::254'] } },
      },
    });
    rx = await startReceiver('127.0.0.2');
    internal = await startReceiver();
  });
  afterEach(() => jest.restoreAllMocks());
  afterAll(async () => {
    await t.close();
    await rx.close();
    await internal.close();
  });

  const create = (url: string) =>
    api(t, 'POST', '/v1/webhooks', { url, events: ['consent.request'] }, 'sk-a');
  const deliveriesOf = async (id: string) =>
    (await api(t, 'GET', `/v1/webhooks/${id}/deliveries`, undefined, 'sk-a')).body;
  /** A consent request of team-a; the webhook's delivery once attempted (it is stored asynchronously). */
  async function anEventDeliveredTo(webhookId: string) {
    expect((await port(t).check(aCheck({ tenantId: 'team-a' }))).kind).toBe('pending');
    for (;;) {
      await t.app.get(WebhookDispatcher).deliverDue();
      const [d] = await deliveriesOf(webhookId);
      if (d?.attempts > 0) return d;
    }
  }
  /** `name` resolves to `address` for the lookups the server makes (registration and delivery). */
  function resolveAs(name: string, registration: string, delivery: string) {
    const lookup = dns.lookup;
    jest
      .spyOn(dns.promises, 'lookup')
      .mockResolvedValue([{ address: registration, family: 4 }] as never);
    jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((
        host: string,
        opts: object,
        cb: (e: null, a: { address: string; family: number }[]) => void,
      ) =>
        host === name
          ? cb(null, [{ address: delivery, family: 4 }])
          : lookup(host, opts, cb as never)) as never);
  }

  it.each([
    ['loopback', 'http://127.0.0.1:9/hook'],
    ['IPv6 loopback', 'http://[::1]:9/hook'],
    ['the cloud metadata address', 'http://169.254.169.254/latest/meta-data/iam/'],
    ['a name resolving to loopback', 'http://localhost:9/hook'],
    // QA: WHATWG URL writes [::ffff:0.0.0.0] as ::ffff:0:0, which no check matched: it reached 127.0.0.1
    ['the unspecified address, IPv4-mapped', 'http://[::ffff:0.0.0.0]:9/hook'],
    ['the unspecified address', 'http://0.0.0.0:9/hook'],
    ['the IPv6 unspecified address', 'http://[::]:9/hook'],
    ['loopback, IPv4-mapped in hex', 'http://[::ffff:7f00:1]:9/hook'],
    ['loopback, IPv4-compatible', 'http://[::127.0.0.1]:9/hook'],
    ['loopback through NAT64', 'http://[64:ff9b::7f00:1]:9/hook'],
  ])('a webhook at %s is refused at registration: 400 WEBHOOK_HOST_REFUSED', async (_what, url) => {
    const res = await create(url);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'WEBHOOK_HOST_REFUSED', details: { url } });
    expect(res.body.message).toMatch(
      /^webhook url refused: .* is denied by the outbound host policy$/,
    );
    expect((await api(t, 'GET', '/v1/webhooks', undefined, 'sk-a')).body).toEqual([]);
  });

  it('a name that resolved to a public address at registration and to loopback at delivery is refused then: failed, never sent, no retry', async () => {
    resolveAs('hooks.tenant.test', '203.0.113.7', '127.0.0.1');
    const hook = await create(`http://hooks.tenant.test:${new URL(internal.url).port}/hook`);
    expect(hook.status).toBe(201);
    try {
      expect(await anEventDeliveredTo(hook.body.id)).toEqual(
        expect.objectContaining({
          status: 'failed',
          attempts: 1,
          last_status_code: null,
          last_error:
            'refused: hooks.tenant.test (127.0.0.1) is denied by the outbound host policy',
          next_attempt_at: null,
        }),
      );
      expect(internal.got).toEqual([]);
    } finally {
      await api(t, 'DELETE', `/v1/webhooks/${hook.body.id}`, undefined, 'sk-a');
    }
  });

  it('a name that resolves to ::ffff:0:0 (the unspecified address, IPv4-mapped) at delivery is refused then, never sent', async () => {
    resolveAs('hooks2.tenant.test', '203.0.113.7', '::ffff:0:0');
    const hook = await create(`http://hooks2.tenant.test:${new URL(internal.url).port}/hook`);
    expect(hook.status).toBe(201);
    try {
      expect(await anEventDeliveredTo(hook.body.id)).toEqual(
        expect.objectContaining({
          status: 'failed',
          last_error:
            'refused: hooks2.tenant.test (::ffff:0:0) is denied by the outbound host policy',
        }),
      );
      expect(internal.got).toEqual([]);
    } finally {
      await api(t, 'DELETE', `/v1/webhooks/${hook.body.id}`, undefined, 'sk-a');
    }
  });

  it('a receiver that redirects to loopback: the redirect is not followed, the attempt fails with its status', async () => {
    const hook = await create(rx.url);
    expect(hook.status).toBe(201);
    rx.redirect.to = internal.url;
    try {
      expect(await anEventDeliveredTo(hook.body.id)).toEqual(
        expect.objectContaining({
          status: 'pending',
          attempts: 1,
          last_status_code: 302,
          last_error: 'the target answered HTTP 302',
        }),
      );
      expect(rx.got).toHaveLength(1);
      expect(internal.got).toEqual([]);
    } finally {
      rx.redirect.to = null;
      await api(t, 'DELETE', `/v1/webhooks/${hook.body.id}`, undefined, 'sk-a');
    }
  });
});

describe('webhooks across a shutdown', () => {
  it('a run that ends just before the server closes still has its run.completed delivery stored', async () => {
    const rx = await startReceiver();
    const first = await startApp({ overrides: KEYS, keepDir: true });
    let second: TestApp | null = null;
    try {
      const hook = await api(
        first,
        'POST',
        '/v1/webhooks',
        { url: rx.url, events: ['run.completed'] },
        'sk-a',
      );
      expect(hook.status).toBe(201);
      const agent = await api(
        first,
        'POST',
        '/v1/agents/',
        { name: 'closing', system: 's' },
        'sk-a',
      );
      const sent = await api(
        first,
        'POST',
        `/v1/agents/${agent.body.id}/messages`,
        { messages: [{ role: 'user', content: 'hi' }] },
        'sk-a',
      );
      expect(sent.status).toBe(200);
      // closed at once: the event's delivery was still being stored (it was lost, the database closed under it)
      await first.close();
      second = await startApp({ overrides: KEYS, dir: first.dir });
      const deliveries = await api(
        second,
        'GET',
        `/v1/webhooks/${hook.body.id}/deliveries`,
        undefined,
        'sk-a',
      );
      expect(deliveries.status).toBe(200);
      expect(deliveries.body).toEqual(
        expect.arrayContaining([expect.objectContaining({ event: 'run.completed' })]),
      );
    } finally {
      await second?.close();
      rmSync(first.dir, { recursive: true, force: true });
      await rx.close();
    }
  });
});
