/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies and frames are free-form JSON */
/**
 * Scale-out: three real server processes on one fresh PostgreSQL database, driven over HTTP and `ws`,
 * with the fake model server and a tool server that counts executions (docs/scale-out.md). Skipped,
 * with the reason printed, when no PostgreSQL answers.
 */
import { Client } from 'pg';
import * as path from 'node:path';
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
import { WsClient } from './consent-helpers';
import { OUTCOME_UNKNOWN } from '../../src/processing/run-recovery';

const ROOT = path.join(__dirname, '..', '..');
const LEASE_MS = 2000;
const RENEW_MS = 300;
/** Short leases, so that a dead instance's agents move within seconds; the fake model as `openai`. */
const configFor = (fake: FakeModelServer) => ({
  cluster: { lease_duration_ms: LEASE_MS, lease_renew_interval_ms: RENEW_MS },
  models: { openai: { base_url: fake.baseUrl } },
});

const app = (i: Instance) => ({ baseUrl: i.url }) as TestApp;
const api = (i: Instance, method: string, p: string, body?: unknown) =>
  apiOf(app(i), method, p, body);
const say = (content: string) => ({ messages: [{ role: 'user', content }] });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function runEnded(i: Instance, runId: string): Promise<any> {
  for (;;) {
    const r = await api(i, 'GET', `/v1/runs/${runId}`);
    if (['completed', 'failed', 'cancelled'].includes(r.body.status)) return r.body;
    await sleep(20);
  }
}

let skipReason: string | null = null;

describe('scale-out: three instances on one PostgreSQL database', () => {
  let db: { url: string; drop(): Promise<void> } | null = null;
  let nodes: Instance[] = [];
  let fake: FakeModelServer;
  let tools: ToolServer;
  const wsClients: WsClient[] = [];

  beforeAll(async () => {
    skipReason = await pgUnavailable();
    if (skipReason) {
      console.log(`scale-out suite skipped: ${skipReason}`);
      return;
    }
    fake = await startFakeModelServer();
    tools = await startToolServer();
    db = await freshDatabase();
    // three instances booting at once on an empty database, with the shipped agent files
    nodes = await Promise.all(
      ['n1', 'n2', 'n3'].map((id) =>
        startInstance({
          id,
          databaseUrl: db!.url,
          config: configFor(fake),
          env: {
            AGENTS_DIR: path.join(ROOT, 'config', 'agents'),
            TOOLS_DIR: path.join(ROOT, 'config', 'tools'),
          },
        }),
      ),
    );
  }, 240_000);

  afterAll(async () => {
    await Promise.all(wsClients.map((c) => c.close()));
    await Promise.all(nodes.map((n) => n.kill('SIGKILL')));
    await fake?.close();
    await tools?.close();
    await db?.drop();
  }, 60_000);

  const live = () => !skipReason;

  /** The instance holding an agent's lease, read from `agent_leases`. */
  async function leaseHolder(agentId: string): Promise<Instance> {
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    const lease = await c
      .query<{ owner: string }>('SELECT owner FROM agent_leases WHERE agent_id = $1', [agentId])
      .finally(() => c.end());
    return nodes.find((n) => n.id === lease.rows[0].owner.split('/')[0])!;
  }

  /** Declares a tool that never answers (its instance dies while it runs); `started` says when it has. */
  async function hangingTool(name: string): Promise<{ started: Promise<void> }> {
    await tools.declare(app(nodes[0]), name);
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle(name, async (_c, hungUp) => {
      started();
      await hungUp;
      return { body: 'late' };
    });
    return { started: toolStarted };
  }

  it('three instances booting at once: one migration run, one copy of each agent file', async () => {
    if (!live()) return;
    const migrating = nodes.filter((n) => /applied \d+ migration\(s\)/.test(n.output()));
    expect(migrating).toHaveLength(1);
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    try {
      const dup = await c.query('SELECT name FROM migrations GROUP BY name HAVING count(*) > 1');
      expect(dup.rows).toEqual([]);
    } finally {
      await c.end();
    }
    const agents = (await api(nodes[1], 'GET', '/v1/agents/?limit=100')).body as any[];
    const names = agents.map((a) => a.name).sort();
    expect(names).toEqual(['refund-desk', 'release-bot']);
    // the instances that lost the insert races answered them: nothing is logged as a failed query
    for (const n of nodes) expect(n.output()).not.toContain('query failed');
    for (const n of nodes) {
      const h = await api(n, 'GET', '/v1/health/');
      expect(h.body).toMatchObject({
        status: 'ok',
        instance_id: n.id,
        database: 'up',
        events: 'up',
      });
    }
  });

  it('50 concurrent messages to one agent over the instances: all answered once, in order, never two runs at once', async () => {
    if (!live()) return;
    fake.reset();
    fake.respond((req: any) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      return { content: `echo:${last.content}` };
    });
    const id = await createAgent(app(nodes[0]), fake, { tools: [], include_base_tools: false });
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        api(nodes[i % 3], 'POST', `/v1/agents/${id}/messages`, say(`m${i}`)),
      ),
    );
    answers.forEach((a, i) => {
      expect(a.status).toBe(200);
      expect(a.body.stop_reason.stop_reason).toBe('end_turn');
      const texts = a.body.messages
        .filter((m: any) => m.message_type === 'assistant_message')
        .map((m: any) => m.content);
      expect(texts).toEqual([`echo:m${i}`]);
    });
    // the history: each user message followed by its own answer, seq_ids strictly increasing
    const history = (await api(nodes[2], 'GET', `/v1/agents/${id}/messages?limit=1000&order=asc`))
      .body as any[];
    expect(history).toHaveLength(100);
    for (let k = 0; k < 100; k += 2) {
      expect(history[k].message_type).toBe('user_message');
      expect(history[k + 1].content).toBe(`echo:${history[k].content}`);
    }
    const seqs = history.map((m) => m.seq_id);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(100);
    // never two runs of the agent at once, and the batches in the order the runs started
    const runs = (await api(nodes[1], 'GET', `/v1/runs/?agent_id=${id}&limit=100`)).body as any[];
    expect(runs.map((r) => r.status)).toEqual(Array(50).fill('completed'));
    const c = new Client({ connectionString: db!.url });
    await c.connect();
    try {
      const rows = (
        await c.query(
          'SELECT id, started_at, completed_at FROM runs WHERE agent_id = $1 ORDER BY started_at',
          [id],
        )
      ).rows.map((r) => ({ id: r.id, start: Number(r.started_at), end: Number(r.completed_at) }));
      for (let k = 1; k < rows.length; k++)
        expect(rows[k].start).toBeGreaterThanOrEqual(rows[k - 1].end);
      const userOrder = history
        .filter((m) => m.message_type === 'user_message')
        .map((m) => m.run_id);
      expect(userOrder).toEqual(rows.map((r) => r.id));
    } finally {
      await c.end();
    }
    fake.respond(null);
  }, 120_000);

  it('each rule at its limit, with calls through different instances at once, never executes past it', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    for (const name of ['cool', 'dd', 'mc', 'ex1', 'ex2']) await tools.declare(app(nodes[0]), name);
    const id = await createAgent(app(nodes[0]), fake, {
      tools: ['cool', 'dd', 'mc', 'ex1', 'ex2'],
      include_base_tools: false,
      tool_rules: [
        { type: 'cooldown', tool_name: 'cool', seconds: 600 },
        { type: 'dedupe', tool_name: 'dd', window_seconds: 600, mode: 'reject' },
        { type: 'max_count_per_step', tool_name: 'mc', max_count_limit: 2 },
        { type: 'exclusive_group', tools: ['ex1', 'ex2'] },
      ],
    });
    // every batch tries each rule's limit: cooldown and dedupe once ever, mc twice and one of ex1/ex2 per batch
    fake.respond((req: any) => {
      const turns = req.messages.filter((m: any) => m.role === 'assistant').length;
      const last = req.messages.at(-1);
      if (last.role === 'user' && !isHeartbeat(last)) {
        return {
          tool_calls: [
            { name: 'cool', arguments: {} },
            { name: 'dd', arguments: { q: 'same' } },
            { name: 'mc', arguments: { q: '1' } },
            { name: 'mc', arguments: { q: '2' } },
            { name: 'mc', arguments: { q: '3' } },
            { name: 'ex1', arguments: {} },
            { name: 'ex2', arguments: {} },
          ],
        };
      }
      return { content: `done ${turns}` };
    });
    const count = (name: string) => tools.calls.filter((c) => c.name === name).length;
    const batch = async (n: Instance, text: string) => {
      const r = await api(n, 'POST', `/v1/agents/${id}/messages`, say(text));
      expect(r.status).toBe(200);
    };
    // at once through the three instances
    await Promise.all(nodes.map((n, i) => batch(n, `together ${i}`)));
    expect([count('cool'), count('dd'), count('mc'), count('ex1') + count('ex2')]).toEqual([
      1, 1, 6, 3,
    ]);
    // one after another, each through the next instance once the last one let the agent go, so that each
    // instance's cached rule state (cooldown and dedupe answers it read earlier) must not be trusted
    for (let i = 0; i < 6; i++) {
      await sleep(RENEW_MS * 3);
      await batch(nodes[i % 3], `alternating ${i}`);
    }
    expect([count('cool'), count('dd'), count('mc'), count('ex1') + count('ex2')]).toEqual([
      1, 1, 18, 9,
    ]);
    fake.respond(null);
  }, 120_000);

  it('a consent request from instance 1 reaches a client on instance 2; approved there, the tool runs once and instance 1’s client is told', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    await tools.declare(app(nodes[0]), 'pay');
    const id = await createAgent(app(nodes[0]), fake, {
      tools: ['pay'],
      include_base_tools: false,
      tool_rules: [{ type: 'requires_consent', tool_name: 'pay', scope: 'payments' }],
    });
    const c1 = await WsClient.connect(nodes[0].url);
    const c2 = await WsClient.connect(nodes[1].url);
    wsClients.push(c1, c2);
    await c1.request({ type: 'subscribe', agent_ids: [id] }, 'subscribed');
    await c2.request({ type: 'subscribe', agent_ids: [id] }, 'subscribed');
    fake.push({ tool_calls: [{ name: 'pay', arguments: { q: '42' } }] }, { content: 'paid' });
    const parking = api(nodes[0], 'POST', `/v1/agents/${id}/messages`, say('pay it'));
    const isRequest = (f: any) => f.type === 'consent.request' && f.request.agent_id === id;
    const stamped = (p: Promise<any>) => p.then((f) => ({ f, at: Date.now() }));
    const [s1, s2] = await Promise.all([stamped(c1.next(isRequest)), stamped(c2.next(isRequest))]);
    const [r1, r2] = [s1.f, s2.f];
    console.log(
      `scale-out: the consent request reached instance 2's client ${s2.at - s1.at} ms after instance 1's`,
    );
    expect((await parking).body.stop_reason.stop_reason).toBe('requires_approval');
    expect(r2.request.id).toBe(r1.request.id);
    const resolved = c1.next(
      (f) => f.type === 'consent.resolved' && f.request_id === r1.request.id,
    );
    c2.send({ type: 'consent.decision', request_id: r2.request.id, decision: 'approve_once' });
    expect(await resolved).toMatchObject({ decision: 'approve_once' });
    for (;;) {
      const runs = (await api(nodes[2], 'GET', `/v1/runs/?agent_id=${id}`)).body as any[];
      if (runs.length === 2 && runs.every((r) => r.status === 'completed')) break;
      await sleep(50);
    }
    expect(tools.calls.filter((c) => c.name === 'pay')).toHaveLength(1);
  }, 60_000);

  it('kill -9 of the instance holding an agent mid-batch: another takes over, the call is not run again, queued messages are answered, the restarted instance disturbs nothing', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    const tool = await hangingTool('slow');
    const id = await createAgent(app(nodes[0]), fake, {
      tools: ['slow'],
      include_base_tools: false,
    });
    fake.respond((req: any) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      return last.content === 'first' && req.messages.at(-1).role === 'user'
        ? { tool_calls: [{ name: 'slow', arguments: {} }] }
        : { content: `answer:${last.content}` };
    });
    const first = (await api(nodes[0], 'POST', `/v1/agents/${id}/messages/async`, say('first')))
      .body;
    await tool.started;
    // the instance running the tool is the lease holder (usually the one the message arrived at)
    const k = nodes.indexOf(await leaseHolder(id));
    const [a, b] = nodes.filter((_n, i) => i !== k);
    const queued = [
      (await api(a, 'POST', `/v1/agents/${id}/messages/async`, say('second'))).body,
      (await api(b, 'POST', `/v1/agents/${id}/messages/async`, say('third'))).body,
    ];
    const killedAt = Date.now();
    await nodes[k].kill('SIGKILL');
    const interrupted = await runEnded(a, first.id);
    const tookOver = Date.now() - killedAt;
    console.log(
      `scale-out: the agent was taken over ${tookOver} ms after kill -9 (lease ${LEASE_MS} ms)`,
    );
    expect(interrupted).toMatchObject({ status: 'failed', error: 'interrupted' });
    const msgs = (await api(a, 'GET', `/v1/runs/${first.id}/messages`)).body as any[];
    expect(msgs.find((m) => m.message_type === 'tool_return_message')).toMatchObject({
      status: 'error',
      tool_return: OUTCOME_UNKNOWN,
    });
    for (const q of queued) {
      expect(await runEnded(b, q.id)).toMatchObject({
        status: 'completed',
        stop_reason: 'end_turn',
      });
    }
    expect(tools.calls.filter((c) => c.name === 'slow')).toHaveLength(1);
    const before = (await api(a, 'GET', `/v1/runs/?agent_id=${id}`)).body;

    // the killed instance comes back under its id: it finds nothing of its own to recover
    nodes[k] = await startInstance({
      id: nodes[k].id,
      databaseUrl: db!.url,
      config: configFor(fake),
    });
    await sleep(RENEW_MS * 3);
    expect((await api(a, 'GET', `/v1/runs/?agent_id=${id}`)).body).toEqual(before);
    const again = await api(nodes[k], 'POST', `/v1/agents/${id}/messages`, say('fourth'));
    expect(again.body.stop_reason.stop_reason).toBe('end_turn');
    expect(tools.calls.filter((c) => c.name === 'slow')).toHaveLength(1);
    fake.respond(null);
  }, 180_000);

  it('an instance that stalls past its lease and comes back writes nothing: the call keeps one return, the new holder runs on', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    await tools.declare(app(nodes[1]), 'stall');
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('stall', async () => {
      started();
      await sleep(LEASE_MS * 3); // answers while its instance is stopped; read when it resumes
      return { body: 'late answer' };
    });
    const id = await createAgent(app(nodes[1]), fake, {
      tools: ['stall'],
      include_base_tools: false,
    });
    fake.respond((req: any) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      return last.content === 'first' && req.messages.at(-1).role === 'user'
        ? { tool_calls: [{ name: 'stall', arguments: {} }] }
        : { content: `answer:${last.content}` };
    });
    const first = (await api(nodes[1], 'POST', `/v1/agents/${id}/messages/async`, say('first')))
      .body;
    await toolStarted;
    // the instance running the tool is the lease holder: whichever took the agent when it woke
    const stalled = await leaseHolder(id);
    const other = nodes.find((n) => n !== stalled)!;
    stalled.pause();
    try {
      const second = (await api(other, 'POST', `/v1/agents/${id}/messages/async`, say('second')))
        .body;
      expect(await runEnded(other, first.id)).toMatchObject({ error: 'interrupted' });
      expect(await runEnded(other, second.id)).toMatchObject({ stop_reason: 'end_turn' });
    } finally {
      stalled.resume();
    }
    await sleep(LEASE_MS * 3); // the tool answers the stalled instance, which then tries to write
    const history = (await api(other, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`))
      .body as any[];
    const returns = history.filter((m) => m.message_type === 'tool_return_message');
    expect(returns.map((m) => m.tool_return)).toEqual([OUTCOME_UNKNOWN]);
    expect(history.map((m) => m.content).filter((c) => typeof c === 'string')).toContain(
      'answer:second',
    );
    const seqs = history.map((m) => m.seq_id);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    expect(new Set(seqs).size).toBe(seqs.length);
    // the resumed instance serves again, without taking over what it lost
    const again = await api(stalled, 'POST', `/v1/agents/${id}/messages`, say('third'));
    expect(again.body.stop_reason.stop_reason).toBe('end_turn');
    fake.respond(null);
  }, 180_000);

  // The instances killed below stay down: the suite ends with them.
  it('kill -9 of the instance running a batch: a stream of the run resumed on another instance ends with what the takeover wrote', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    const tool = await hangingTool('hang');
    const id = await createAgent(app(nodes[0]), fake, {
      tools: ['hang'],
      include_base_tools: false,
    });
    fake.push({ tool_calls: [{ name: 'hang', arguments: {} }] });
    const run = (await api(nodes[0], 'POST', `/v1/agents/${id}/messages/async`, say('go'))).body;
    await tool.started;
    const holder = await leaseHolder(id);
    const other = nodes.find((n) => n !== holder)!;
    // the stream follows the run from another instance: the stored call first, then live frames
    const res = await fetch(`${other.url}/v1/runs/${run.id}/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ include_pings: false }),
    });
    const reader = res.body!.getReader();
    const utf8 = new TextDecoder();
    let text = '';
    while (!text.includes('tool_call_message'))
      text += utf8.decode((await reader.read()).value, { stream: true });
    await holder.kill('SIGKILL');
    nodes = nodes.filter((n) => n !== holder);
    for (let r = await reader.read(); !r.done; r = await reader.read())
      text += utf8.decode(r.value, { stream: true });
    const blocks = text.split('\n\n').filter(Boolean);
    const frames = blocks.filter((b) => b.startsWith('data: {')).map((b) => JSON.parse(b.slice(6)));
    expect(frames.map((f) => f.message_type)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'stop_reason',
      'usage_statistics',
    ]);
    expect(frames[1]).toMatchObject({ status: 'error', tool_return: OUTCOME_UNKNOWN });
    expect(frames[2].stop_reason).toBe('error');
    expect(blocks.slice(-2).map((b) => b.split('\n')[0])).toEqual(['event: error', 'data: [DONE]']);
    expect((await api(other, 'GET', `/v1/runs/${run.id}`)).body.status).toBe('failed');
    expect(tools.calls.filter((c) => c.name === 'hang')).toHaveLength(1);
  }, 60_000);

  it('max 3 refunds per batch hold when the instance dies mid refund and the approved ones go on elsewhere, before the messages queued behind', async () => {
    if (!live()) return;
    fake.reset();
    tools.calls.length = 0;
    await tools.declare(app(nodes[0]), 'refund', { safety: 'side_effecting' });
    let started!: () => void;
    const secondStarted = new Promise<void>((r) => (started = r));
    tools.handle('refund', async (c, hungUp) => {
      if (c.arguments.q === 'r2') {
        started();
        await hungUp; // its instance dies while it runs: its outcome is unknown, and it counts
      }
      return { body: `refunded ${String(c.arguments.q)}` };
    });
    const id = await createAgent(app(nodes[0]), fake, {
      tools: ['refund'],
      include_base_tools: false,
      tool_rules: [
        { type: 'requires_consent', tool_name: 'refund', scope: 'refunds' },
        { type: 'max_count_per_step', tool_name: 'refund', max_count_limit: 3 },
      ],
    });
    // three refunds wait for consent; once they ran, the model asks for a fourth in the same batch
    fake.respond((req: any) => {
      const said = req.messages.filter((m: any) => !isHeartbeat(m));
      const text = said.filter((m: any) => m.role === 'user').at(-1).content;
      if (text !== 'refund') return { content: `answer:${text}` };
      const roles: string[] = said.map((m: any) => m.role);
      const turns = roles.slice(roles.lastIndexOf('user')).filter((r) => r === 'assistant').length;
      if (turns === 0)
        return {
          tool_calls: ['r1', 'r2', 'r3'].map((q) => ({ name: 'refund', arguments: { q } })),
        };
      if (turns === 1) return { tool_calls: [{ name: 'refund', arguments: { q: 'r4' } }] };
      return { content: 'refunded' };
    });
    const parked = await api(nodes[0], 'POST', `/v1/agents/${id}/messages`, say('refund'));
    expect(parked.body.stop_reason.stop_reason).toBe('requires_approval');
    const pending = (await api(nodes[1], 'GET', `/v1/consent/requests?agent_id=${id}`))
      .body as any[];
    expect(pending).toHaveLength(3);
    for (const [i, p] of pending.entries())
      await api(nodes[i % 2], 'POST', `/v1/consent/requests/${p.id}/decision`, {
        decision: 'approve_once',
      });
    await secondStarted;
    const holder = await leaseHolder(id);
    const other = nodes.find((n) => n !== holder)!;
    // messages sent while the approved refunds run wait behind their batch
    const queued = Array.from({ length: 10 }, (_, i) => `m${i}`);
    for (const text of queued)
      expect((await api(other, 'POST', `/v1/agents/${id}/messages/async`, say(text))).status).toBe(
        202,
      );
    await holder.kill('SIGKILL');
    nodes = nodes.filter((n) => n !== holder);
    // the other instance takes over: r3 (approved, not started) runs there, then the model asks for r4
    for (;;) {
      const runs = (await api(other, 'GET', `/v1/runs/?agent_id=${id}&limit=100`)).body as any[];
      if (runs.length > 12 && runs.every((r) => ['completed', 'failed'].includes(r.status))) break;
      await sleep(50);
    }
    const history = (await api(other, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`))
      .body as any[];
    // the batch ends before the first queued message starts, and those run in the order they came
    const texts = history.map((m) => m.content ?? m.tool_return).filter(Boolean);
    expect(texts.slice(texts.indexOf('refunded'))).toEqual([
      'refunded',
      ...queued.flatMap((t) => [t, `answer:${t}`]),
    ]);
    const returns = history.filter((m) => m.message_type === 'tool_return_message');
    expect(returns.map((m) => m.tool_return)).toEqual([
      'refunded r1', // stored as it finished, before r2 started
      OUTCOME_UNKNOWN, // r2: its instance died while it ran
      'refunded r3',
      expect.stringContaining('reached its limit of 3 calls in this batch'),
    ]);
    expect(tools.calls.map((c) => c.arguments.q)).toEqual(['r1', 'r2', 'r3']);
    fake.respond(null);
  }, 60_000);
});
