/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies, frames and deliveries are free-form JSON */
/**
 * Hostile tenants across instances: two server processes on one fresh PostgreSQL database, two API keys
 * mapped to two tenants. Whatever tenant B sends to either instance never reaches tenant A's runs,
 * consent requests or events, while A's own clients on the other instance follow them; and events too
 * big for a NOTIFY payload still reach the other instance (docs/security.md, docs/scale-out.md).
 * Skipped, with the reason printed, when no PostgreSQL answers.
 */
import { Client } from 'pg';
import type { TestApp } from '../support/app-harness';
import { freshDatabase, Instance, pgUnavailable, startInstance } from '../support/cluster-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import {
  api as apiOf,
  createAgent,
  isHeartbeat,
  startToolServer,
  ToolServer,
} from '../support/processing-fixtures';
import { startReceivers, until } from '../support/receivers';
import { WsClient } from './consent-helpers';

const KEY_A = 'xt-key-a';
const KEY_B = 'xt-key-b';
const configFor = (fake: FakeModelServer) => ({
  cluster: { lease_duration_ms: 2000, lease_renew_interval_ms: 300 },
  models: { openai: { base_url: fake.baseUrl } },
  auth: {
    api_keys: [
      { key: KEY_A, tenant: 'xt-tenant-a' },
      { key: KEY_B, tenant: 'xt-tenant-b' },
    ],
  },
  webhooks: { retry_base_seconds: 1 },
});

const app = (i: Instance) => ({ baseUrl: i.url }) as TestApp;
const as =
  (key: string) =>
  (i: Instance, method: string, p: string, body?: unknown, headers: Record<string, string> = {}) =>
    apiOf(app(i), method, p, body, { authorization: `Bearer ${key}`, ...headers });
const asA = as(KEY_A);
const asB = as(KEY_B);
const say = (content: string, extra: Record<string, unknown> = {}) => ({
  messages: [{ role: 'user', content }],
  ...extra,
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const FINAL = ['completed', 'failed', 'cancelled'];

/** Reads an SSE answer to its end; the `data:` JSON frames and the raw text. */
async function sse(res: Response): Promise<{ frames: any[]; text: string }> {
  const text = await res.text();
  const frames = text
    .split('\n\n')
    .filter((b) => b.startsWith('data: {'))
    .map((b) => JSON.parse(b.slice(6)));
  return { frames, text };
}

let skipReason: string | null = null;

describe('hostile tenants across two instances on one PostgreSQL database', () => {
  let db: { url: string; drop(): Promise<void> } | null = null;
  let nodes: Instance[] = [];
  let fake: FakeModelServer;
  let tools: ToolServer;
  const wsClients: WsClient[] = [];
  let rx: Awaited<ReturnType<typeof startReceivers>>;

  beforeAll(async () => {
    skipReason = process.env.TEST_DATABASE_URL
      ? await pgUnavailable()
      : 'TEST_DATABASE_URL is not set (this suite runs on PostgreSQL only)';
    if (skipReason) {
      console.log(`cross-instance tenant suite skipped: ${skipReason}`);
      return;
    }
    fake = await startFakeModelServer();
    tools = await startToolServer();
    rx = await startReceivers(new Set());
    db = await freshDatabase();
    nodes = [];
    // one after the other: the first applies the migrations
    for (const id of ['x1', 'x2'])
      nodes.push(
        await startInstance({
          id,
          databaseUrl: db.url,
          config: configFor(fake),
          // webhook signing secrets are sealed with it
          env: { SECRETS_ENCRYPTION_KEY: 'dGVzdC1rZXktZm9yLXRlbmFudC1zZWNyZXRzLTMyYiE=' },
        }),
      );
    // every test's model: the user's last words decide (a tool call first, then an answer)
    fake.respond((req: any) => {
      const said = req.messages.filter((m: any) => !isHeartbeat(m));
      const roles: string[] = said.map((m: any) => m.role);
      const lastUser = roles.lastIndexOf('user');
      const text: string = said[lastUser].content;
      const answered = roles.slice(lastUser).includes('tool');
      const [verb, arg] = text.split(' ');
      if (!answered && verb === 'pay')
        return { tool_calls: [{ name: 'pay', arguments: { q: arg } }] };
      if (!answered && verb === 'gate')
        return { tool_calls: [{ name: 'gate', arguments: { q: arg } }] };
      if (!answered && verb === 'hold') return { tool_calls: [{ name: 'gate2', arguments: {} }] };
      if (!answered && verb === 'big')
        return {
          tool_calls: arg
            .split(',')
            .map((q) => ({ name: 'big', arguments: { q } }))
            .concat([{ name: 'big', arguments: { q: 'huge' } }]),
        };
      return { content: `answer:${text.slice(0, 40)}` };
    });
  }, 240_000);

  afterAll(async () => {
    await Promise.all(wsClients.map((c) => c.close()));
    await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
    await fake?.close();
    await tools?.close();
    await rx?.close();
    await db?.drop();
  }, 60_000);

  const live = () => !skipReason;

  async function ws(i: Instance, key: string, agentIds: string[] | null): Promise<WsClient> {
    const c = await WsClient.connect(i.url, { key });
    wsClients.push(c);
    await c.request({ type: 'subscribe', agent_ids: agentIds }, 'subscribed');
    return c;
  }

  /** The instance holding an agent's lease (null: none does now). */
  async function leaseHolder(agentId: string): Promise<Instance | null> {
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    const lease = await c
      .query<{ owner: string }>(
        `SELECT owner FROM agent_leases WHERE agent_id = $1
           AND expires_at > (extract(epoch from clock_timestamp()) * 1000)::bigint`,
        [agentId],
      )
      .finally(() => c.end());
    const owner = lease.rows[0]?.owner.split('/')[0];
    return nodes.find((n) => n.id === owner) ?? null;
  }

  async function runEnded(i: Instance, runId: string): Promise<any> {
    for (;;) {
      const r = await asA(i, 'GET', `/v1/runs/${runId}`);
      if (FINAL.includes(r.body.status)) return r.body;
      await sleep(20);
    }
  }

  async function declareTool(key: string, name: string, over: Record<string, unknown> = {}) {
    const r = await as(key)(nodes[0], 'POST', '/v1/tools/', {
      name,
      description: `test tool ${name}`,
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      safety: 'read_only',
      kind: 'http',
      http: { url: `${tools.baseUrl}/tool/${name}`, method: 'POST' },
      ...over,
    });
    if (r.status !== 200) throw new Error(`tool declare failed: ${JSON.stringify(r.body)}`);
  }

  /** No frame a client got mentions any of these ids (the echoes of its own frames aside). */
  function expectNothingAbout(c: WsClient, ids: string[]) {
    const leaked = c.frames.filter(
      (f) =>
        f.type !== 'subscribed' &&
        !(f.type === 'error' && f.code === 'NOT_FOUND') &&
        ids.some((id) => JSON.stringify(f).includes(id)),
    );
    expect(leaked).toEqual([]);
  }

  it('a consent request parked on one instance: tenant B’s clients on both instances (following A’s agent, or all) get no frame of it, A’s client on the other instance does; B can neither see nor decide it by REST, WebSocket, in-band approval or a decision URL; A decides it from the other instance', async () => {
    if (!live()) return;
    await declareTool(KEY_A, 'pay');
    await declareTool(KEY_B, 'pay');
    const consent = {
      tools: ['pay'],
      include_base_tools: false,
      tool_rules: [{ type: 'requires_consent', tool_name: 'pay', scope: 'payments' }],
    };
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    const agentA = await createAgent(app(nodes[0]), fake, consent, auth(KEY_A));
    const agentB = await createAgent(app(nodes[1]), fake, consent, auth(KEY_B));
    // each tenant's webhook for every event, on its own path
    for (const [key, p] of [
      [KEY_A, '/a'],
      [KEY_B, '/b'],
    ])
      expect(
        (
          await as(key)(nodes[1], 'POST', '/v1/webhooks/', {
            url: rx.url(p),
            events: ['consent.request', 'consent.resolved', 'run.completed', 'run.failed'],
          })
        ).status,
      ).toBe(201);
    // B follows A's agent, and everything, on both instances; A follows its agent on both
    const bSpies = [
      await ws(nodes[0], KEY_B, [agentA]),
      await ws(nodes[1], KEY_B, [agentA]),
      await ws(nodes[0], KEY_B, null),
      await ws(nodes[1], KEY_B, null),
    ];
    const aClients = [await ws(nodes[0], KEY_A, [agentA]), await ws(nodes[1], KEY_A, null)];

    const parked = await asA(nodes[0], 'POST', `/v1/agents/${agentA}/messages`, say('pay 42'), {});
    expect(parked.body.stop_reason.stop_reason).toBe('requires_approval');
    const runId: string = parked.body.run_id;
    const isRequest = (f: any) => f.type === 'consent.request' && f.request.agent_id === agentA;
    const [r1, r2] = await Promise.all(aClients.map((c) => c.next(isRequest, 0, 15_000)));
    const requestId: string = r1.request.id;
    expect(r2.request.id).toBe(requestId);
    const holder = (await leaseHolder(agentA)) ?? nodes[0];
    console.log(`cross-tenant: A's run ${runId} parked; its agent held by ${holder.id}`);

    // B, on either instance: the request is not found, nor listed, nor in the audit
    for (const n of nodes) {
      expect((await asB(n, 'GET', `/v1/consent/requests/${requestId}`)).status).toBe(404);
      expect((await asB(n, 'GET', `/v1/consent/requests?agent_id=${agentA}`)).body).toEqual([]);
      expect((await asB(n, 'GET', '/v1/consent/requests?status=all')).body).toEqual([]);
      expect((await asB(n, 'GET', `/v1/consent/audit?request_id=${requestId}`)).body).toEqual([]);
      const decided = await asB(n, 'POST', `/v1/consent/requests/${requestId}/decision`, {
        decision: 'approve_once',
      });
      expect(decided.status).toBe(404);
      // in band: an approval of A's call, to A's agent and to B's own
      const call = parked.body.messages.find(
        (m: any) => m.message_type === 'approval_request_message',
      );
      const toolCallId: string = call.tool_call.tool_call_id;
      const approvals = {
        messages: [
          {
            type: 'approval',
            approvals: [{ type: 'approval', tool_call_id: toolCallId, approve: true }],
          },
        ],
      };
      expect((await asB(n, 'POST', `/v1/agents/${agentA}/messages`, approvals)).status).toBe(404);
      const ownAgent = await asB(n, 'POST', `/v1/agents/${agentB}/messages`, approvals);
      expect(ownAgent.status).toBeGreaterThanOrEqual(400);
    }
    // over the WebSocket, from a B client on each instance
    for (const spy of bSpies.slice(0, 2)) {
      const err = await spy.request(
        { type: 'consent.decision', request_id: requestId, decision: 'approve_once' },
        ['error', 'consent.resolved'],
      );
      expect(err).toMatchObject({ type: 'error', code: 'NOT_FOUND', ref: requestId });
    }
    // a B client that subscribes late is not sent A's waiting request either
    const late = await ws(nodes[1], KEY_B, [agentA]);
    const lateAll = await ws(nodes[0], KEY_B, null);
    // the decision URL of A's webhook delivery decides only A's request; B's webhook got none
    await until(() => rx.bodies.some((b) => b.path === '/a' && b.body.includes(requestId)));
    const delivery = JSON.parse(
      rx.bodies.find((b) => b.path === '/a' && b.body.includes('consent.request'))!.body,
    );
    expect(delivery.data.request.id).toBe(requestId);
    const forged = `${delivery.data.decision_url.replace(/\/[^/]+$/, '/')}${'0'.repeat(43)}`;
    const forgedAnswer = await fetch(forged, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ decision: 'approve_once' }),
    });
    expect(forgedAnswer.status).toBe(404);
    expect((await asA(nodes[1], 'GET', `/v1/consent/requests/${requestId}`)).body.status).toBe(
      'pending',
    );

    // A decides from its client on the instance that does not hold the agent
    const other = nodes.find((n) => n !== holder)!;
    const aOther = aClients[nodes.indexOf(other)];
    aOther.send({ type: 'consent.decision', request_id: requestId, decision: 'approve_once' });
    expect(await runEnded(other, runId)).toMatchObject({ status: 'completed' });
    await Promise.all(
      aClients.map((c) =>
        c.next(
          (f) => f.type === 'run.event' && f.run_id === runId && f.event === 'run.completed',
          0,
          15_000,
        ),
      ),
    );
    // the decision's continuation runs the call (on whichever instance holds the agent then)
    for (;;) {
      const runs = (await asA(other, 'GET', `/v1/runs/?agent_id=${agentA}`)).body as any[];
      if (runs.length === 2 && runs.every((r) => r.status === 'completed')) break;
      await sleep(50);
    }
    expect(tools.calls.filter((c) => c.name === 'pay')).toHaveLength(1);
    // A's webhook: the request, its resolution and the run's end; B's: nothing
    await until(
      () => rx.bodies.filter((b) => b.path === '/a' && b.body.includes(runId)).length >= 3,
    );
    await sleep(1500); // the other instance's pump had time to send anything it wrongly stored
    // the parked run's end, the request, its resolution, and the end of the decision's continuation
    const runIds = ((await asA(other, 'GET', `/v1/runs/?agent_id=${agentA}`)).body as any[]).map(
      (r) => r.id,
    );
    const events = rx.bodies
      .filter((b) => b.path === '/a')
      .map((b) => JSON.parse(b.body))
      .map(
        (d) =>
          `${d.event}:${d.data.run_id ?? d.data.request?.run_id}:${d.data.agent_id ?? d.data.request?.agent_id}`,
      )
      .sort();
    expect(events).toEqual(
      [
        `consent.request:${runId}:${agentA}`,
        `consent.resolved:${runId}:${agentA}`,
        ...runIds.map((id) => `run.completed:${id}:${agentA}`),
      ].sort(),
    );
    expect(rx.bodies.filter((b) => b.path === '/b')).toEqual([]);
    for (const c of [...bSpies, late, lateAll]) expectNothingAbout(c, [agentA, runId, requestId]);
    // B's deliveries list holds nothing either
    const hooksB = (await asB(nodes[0], 'GET', '/v1/webhooks/')).body as any[];
    expect((await asB(nodes[1], 'GET', `/v1/webhooks/${hooksB[0].id}/deliveries`)).body).toEqual(
      [],
    );
  }, 120_000);

  it('A’s run going on one instance: B cannot read, resume, follow, filter for or cancel it through the other; A’s stream resumed there follows it to its end', async () => {
    if (!live()) return;
    await declareTool(KEY_A, 'gate');
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('gate', async () => {
      started();
      await gate;
      return { body: 'gate opened' };
    });
    const auth = (key: string) => ({ authorization: `Bearer ${key}` });
    const agentA = await createAgent(
      app(nodes[0]),
      fake,
      { tools: ['gate'], include_base_tools: false },
      auth(KEY_A),
    );
    const agentB = await createAgent(
      app(nodes[1]),
      fake,
      { include_base_tools: false },
      auth(KEY_B),
    );
    const otids = { otid: 'otid-shared-by-both-tenants' };
    const run = (
      await asA(nodes[0], 'POST', `/v1/agents/${agentA}/messages/async`, {
        messages: [{ role: 'user', content: 'gate secret-of-a', ...otids }],
        callback_url: rx.url('/a-callback'),
      })
    ).body;
    await toolStarted;
    const holder = (await leaseHolder(agentA))!;
    const other = nodes.find((n) => n !== holder)!;
    console.log(`cross-tenant: A's run ${run.id} runs on ${holder.id}; B probes ${other.id}`);
    const stepsA = (await asA(other, 'GET', `/v1/runs/${run.id}/steps`)).body as any[];
    expect(stepsA.length).toBeGreaterThan(0);
    const msgsA = (await asA(other, 'GET', `/v1/runs/${run.id}/messages`)).body as any[];

    // A follows the run from the other instance: a resumed stream, and a WebSocket client
    const followA = fetch(`${other.url}/v1/runs/${run.id}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_A}` },
      body: JSON.stringify({ include_pings: false }),
    });
    const aWs = await ws(other, KEY_A, [agentA]);
    const bWs = [await ws(other, KEY_B, [agentA]), await ws(other, KEY_B, null)];

    for (const n of [other, holder]) {
      // the run, its parts and its stream
      for (const p of ['', '/messages', '/steps', '/usage', '/trace'])
        expect((await asB(n, 'GET', `/v1/runs/${run.id}${p}`)).status).toBe(404);
      for (const body of [{}, { starting_after: 0 }, { starting_after: -1, include_pings: true }])
        expect((await asB(n, 'POST', `/v1/runs/${run.id}/stream`, body)).status).toBe(404);
      expect(
        (await asB(n, 'POST', `/v1/runs/${run.id}/stream`, {}, { 'last-event-id': '0' })).status,
      ).toBe(404);
      expect((await asB(n, 'GET', `/v1/runs/${run.id}/stream`)).status).toBe(404);
      // the agent's history and its stream
      expect((await asB(n, 'GET', `/v1/agents/${agentA}/messages`)).status).toBe(404);
      expect(
        (
          await asB(n, 'POST', `/v1/agents/${agentA}/messages/stream`, {
            messages: [{ role: 'user', content: 'gate x', ...otids }],
          })
        ).status,
      ).toBe(404);
      // lists filtered by A's ids
      for (const p of [
        `/v1/runs/?agent_id=${agentA}`,
        `/v1/runs/?agent_ids=${agentA}&agent_ids=${agentB}`,
        `/v1/messages/?agent_id=${agentA}`,
        `/v1/steps/?agent_id=${agentA}`,
        `/v1/steps/?run_id=${run.id}`,
        `/v1/conversations/?agent_id=${agentA}`,
        // A's ids as cursors: they page as ids that exist nowhere, or are refused
        `/v1/runs/?after=${run.id}`,
        `/v1/runs/?before=${run.id}&order=asc`,
        ...msgsA.map((m) => `/v1/messages/?after=${m.id}`),
        ...msgsA.map((m) => `/v1/agents/${agentB}/messages?before=${m.id}`),
        ...stepsA.map((st) => `/v1/steps/?after=${st.id}`),
      ]) {
        const r = await asB(n, 'GET', p);
        expect([200, 400, 404]).toContain(r.status);
        // B's own rows at most (a filter this server does not know is ignored, as Letta's)
        expect(JSON.stringify(r.body)).not.toContain(agentA);
        expect(JSON.stringify(r.body)).not.toContain(run.id);
      }
      // the agent's default conversation: its stream, its messages, its cancel
      for (const [method, p] of [
        ['POST', `/v1/conversations/${agentA}/stream`],
        ['POST', `/v1/conversations/default/stream?agent_id=${agentA}`],
        ['GET', `/v1/conversations/default/messages?agent_id=${agentA}`],
        ['POST', `/v1/conversations/${agentA}/cancel`],
        ['POST', `/v1/conversations/default/cancel?agent_id=${agentA}`],
      ])
        expect((await asB(n, method, p, method === 'POST' ? {} : undefined)).status).toBe(404);
      for (const s of stepsA) {
        expect((await asB(n, 'GET', `/v1/steps/${s.id}`)).status).toBe(404);
        expect((await asB(n, 'GET', `/v1/steps/${s.id}/messages`)).status).toBe(404);
      }
      for (const m of msgsA) expect((await asB(n, 'GET', `/v1/messages/${m.id}`)).status).toBe(404);
      for (const filter of [{}, { agent_id: agentA }]) {
        const searched = await asB(n, 'POST', '/v1/messages/search', {
          query: 'secret-of-a',
          ...filter,
        });
        expect(JSON.stringify(searched.body)).not.toContain('secret-of-a');
      }
      // cancelling: A's agent is not found; B's own agent has no such run
      expect((await asB(n, 'POST', `/v1/agents/${agentA}/messages/cancel`, {})).status).toBe(404);
      const cancelled = await asB(n, 'POST', `/v1/agents/${agentB}/messages/cancel`, {
        run_ids: [run.id],
      });
      expect(cancelled.body).toEqual({ [run.id]: 'failed' });
      expect((await asB(n, 'POST', `/v1/agents/${agentB}/messages/cancel`, {})).body).toEqual({});
    }
    // B's own send with A's otids is B's own new run, not a resume of A's
    const bStream = await fetch(`${other.url}/v1/agents/${agentB}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY_B}` },
      body: JSON.stringify({ messages: [{ role: 'user', content: 'gate x', ...otids }] }),
    });
    const bFrames = await sse(bStream);
    expect(bFrames.text).not.toContain(run.id);
    expect(bFrames.text).not.toContain('secret-of-a');
    expect(bFrames.text).toContain('answer:gate x');

    expect((await asA(other, 'GET', `/v1/runs/${run.id}`)).body.status).toBe('running');
    open();
    const { frames } = await sse(await followA);
    expect(frames.map((f) => f.message_type)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'stop_reason',
      'usage_statistics',
    ]);
    expect(frames[1].tool_return).toBe('gate opened');
    expect(await runEnded(other, run.id)).toMatchObject({ status: 'completed' });
    await aWs.next((f) => f.type === 'run.event' && f.event === 'run.completed', 0, 15_000);
    await until(() => rx.arrivals.includes('/a-callback'));
    await sleep(500);
    for (const c of bWs) expectNothingAbout(c, [agentA, run.id]);
    // B's webhook got its own run's end, nothing of A's
    const toB = rx.bodies.filter((b) => b.path === '/b').map((b) => b.body);
    expect(toB.length).toBeGreaterThan(0);
    for (const body of toB) {
      expect(body).toContain(agentB);
      expect(body).not.toContain(agentA);
      expect(body).not.toContain(run.id);
    }
  }, 120_000);

  it('events too big for one NOTIFY (multi-byte text near and over 8000 bytes, a tool return of 200 KB) reach the other instance whole: its stream, its WebSocket client and its waiting caller see the run end', async () => {
    if (!live()) return;
    await declareTool(KEY_A, 'gate2');
    await declareTool(KEY_A, 'big');
    // each size is a count of '€' (3 bytes in UTF-8, 1 UTF-16 unit): around the 8000-byte limit
    const sizes = [2400, 2480, 2500, 2520, 2560, 2640, 2700];
    const huge = 'ü€😀'.repeat(200_000 / 9);
    tools.handle('big', (c) => ({
      body: c.arguments.q === 'huge' ? huge : '€'.repeat(Number(c.arguments.q)),
    }));
    const auth = { authorization: `Bearer ${KEY_A}` };
    const agentA = await createAgent(
      app(nodes[0]),
      fake,
      { tools: ['big', 'gate2'], include_base_tools: false },
      auth,
    );
    // a first run holds the agent on one instance while the test finds which
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('gate2', async () => {
      started();
      await gate;
      return { body: 'ok' };
    });
    const first = (await asA(nodes[0], 'POST', `/v1/agents/${agentA}/messages/async`, say('hold')))
      .body;
    await toolStarted;
    const holder = (await leaseHolder(agentA))!;
    const other = nodes.find((n) => n !== holder)!;
    const aWs = await ws(other, KEY_A, [agentA]);
    const bWs = await ws(other, KEY_B, null);
    // the big run is sent (and waited for) at the other instance; the holder runs it after the first
    const content = `big ${sizes.join(',')} ${'ж'.repeat(50_000)}`;
    const waiting = asA(other, 'POST', `/v1/agents/${agentA}/messages/stream`, say(content));
    await until(
      async () =>
        ((await asA(other, 'GET', `/v1/runs/?agent_id=${agentA}`)).body as any[]).length === 2,
    );
    open();
    const answer = await waiting;
    expect(await runEnded(other, first.id)).toMatchObject({ status: 'completed' });
    const streamed = (answer.body as string)
      .split('\n\n')
      .filter((b) => b.startsWith('data: {'))
      .map((b) => JSON.parse(b.slice(6)));
    const bigRun: string = streamed[0].run_id;
    expect(streamed.at(-2)).toMatchObject({ message_type: 'stop_reason', stop_reason: 'end_turn' });
    const userMessages = (
      (await asA(other, 'GET', `/v1/runs/${bigRun}/messages?limit=100`)).body as any[]
    ).filter((m) => m.message_type === 'user_message');
    expect(userMessages.map((m) => m.content)).toEqual([content]);
    const returns = streamed.filter((f) => f.message_type === 'tool_return_message');
    const stored = (
      (await asA(holder, 'GET', `/v1/runs/${bigRun}/messages?limit=100`)).body as any[]
    )
      .filter((m) => m.message_type === 'tool_return_message')
      .map((m) => m.tool_return);
    expect(returns.map((r) => r.tool_return)).toEqual(stored);
    expect(stored.slice(0, sizes.length)).toEqual(sizes.map((n) => '€'.repeat(n)));
    // the WebSocket client on the other instance saw every message and the run's end
    await aWs.next(
      (f) => f.type === 'run.event' && f.run_id === bigRun && f.event === 'run.completed',
      0,
      15_000,
    );
    const wsReturns = aWs.frames.filter(
      (f) =>
        f.type === 'run.event' &&
        f.run_id === bigRun &&
        f.event === 'message' &&
        JSON.stringify(f.data).includes('tool_return'),
    );
    expect(wsReturns.length).toBe(sizes.length + 1);
    expectNothingAbout(bWs, [agentA, bigRun]);
    // the big events went through the overflow table, not a NOTIFY payload
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    const overflowed = await c
      .query<{ n: string }>('SELECT count(*) AS n FROM bus_payloads')
      .finally(() => c.end());
    expect(Number(overflowed.rows[0].n)).toBeGreaterThan(0);
    for (const n of nodes) expect(n.output()).not.toContain('not sent to other instances');
    for (const n of nodes) expect(n.output()).not.toContain('could not read event');
  }, 120_000);
});
