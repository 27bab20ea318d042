/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies and stored payloads are free-form JSON */
/**
 * Scale-out soak: two real server processes on one fresh PostgreSQL database, messages sent to the same
 * agents through both at once, and `kill -9` of one of them at random moments (then restarted, under its
 * id or a new one). Afterwards the invariants the docs promise are read from the tool server, the
 * database and the API (docs/scale-out.md, docs/executor.md, docs/processing.md):
 *
 * - no tool_call_id is executed twice; a call needing consent runs only once approved, and an approved
 *   one runs (wherever its batch went on); a call held behind it only after it;
 * - no rule bound is passed: `max_count_per_step` and exclusive groups per batch, dedupe and cooldown
 *   per agent;
 * - every run ends (completed, failed or cancelled: recovered when its instance died);
 * - every call has exactly one stored return, the tool's or "outcome unknown" ("not run" only for a call
 *   the tool server never saw); each sent message is stored once;
 * - seq_ids per agent unique and gap-free, each batch's messages contiguous;
 * - no 5xx from either instance but the documented `503 INTERRUPTED` of a run its holder died in.
 *
 * SOAK_ROUNDS (default 3) sets how many kills a run makes; SOAK_SEED replays its random choices (each
 * run prints its seed; the processes' timing still varies). Skipped, with the reason printed, without
 * TEST_DATABASE_URL or when no PostgreSQL answers there.
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
import { NOT_STARTED, OUTCOME_UNKNOWN } from '../../src/processing/run-recovery';

const ROUNDS = Number(process.env.SOAK_ROUNDS ?? 3);
const SEED = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const LEASE_MS = 2000;
const RENEW_MS = 300;
const SINKS = 3;
const REFUND_LIMIT = 3;
/** Far longer than any answer takes here (a takeover waits for a lease of 2 s, a restart ~5 s). */
const ANSWER_WITHIN_MS = 60_000;
/** Boots, drain and checks, and about 6 s a round on a loaded 2-core machine. */
const SOAK_MS = 120_000 + ROUNDS * 15_000;

/** mulberry32: a run is replayed from its seed (the timing of the processes still varies). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(SEED);
const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let skipReason: string | null = null;
jest.setTimeout(SOAK_MS);

/** What the database keeps of a call: its consent request and audit, its batch's runs and messages. */
async function story(pg: Client, toolCallId: string): Promise<string> {
  const q = async (sql: string, args: unknown[]) =>
    (await pg.query(sql, args)).rows.map((r) => JSON.stringify(r)).join('\n');
  const req = (
    await pg.query('SELECT * FROM consent_requests WHERE tool_call_id = $1', [toolCallId])
  ).rows[0];
  const batch = req?.batch_id;
  return [
    `request: ${JSON.stringify(req)}`,
    `audit:\n${await q('SELECT * FROM consent_audit WHERE tool_call_id = $1 ORDER BY id', [toolCallId])}`,
    `runs:\n${await q('SELECT id, status, stop_reason, error, input, parked, continued_by, created_at, started_at, completed_at FROM runs WHERE batch_id = $1 ORDER BY created_at', [batch])}`,
    `messages:\n${await q('SELECT seq_id, run_id, message_type, payload, created_at FROM messages WHERE batch_id = $1 ORDER BY seq_id', [batch])}`,
  ].join('\n');
}

describe('scale-out soak: two instances, kill -9 at random moments', () => {
  let db: { url: string; drop(): Promise<void> } | null = null;
  let fake: FakeModelServer;
  let tools: ToolServer;
  /** The two slots; null while its process is down. */
  const nodes: (Instance | null)[] = [null, null];
  let restarts = 0;

  const configFor = () => ({
    cluster: { lease_duration_ms: LEASE_MS, lease_renew_interval_ms: RENEW_MS },
    models: { openai: { base_url: fake.baseUrl } },
  });
  /** Every process started, the killed ones included: their logs are printed when an invariant breaks. */
  const started: Instance[] = [];
  const boot = async (id: string) => {
    const node = await startInstance({ id, databaseUrl: db!.url, config: configFor() });
    started.push(node);
    return node;
  };

  beforeAll(async () => {
    skipReason = process.env.TEST_DATABASE_URL
      ? await pgUnavailable()
      : 'TEST_DATABASE_URL is not set (the soak runs on PostgreSQL only)';
    if (skipReason) {
      console.log(`scale-out soak skipped: ${skipReason}`);
      return;
    }
    fake = await startFakeModelServer();
    tools = await startToolServer();
    db = await freshDatabase();
    nodes[0] = await boot('s1'); // migrates; the second boots on a migrated database
    nodes[1] = await boot('s2');
  }, 120_000);

  afterAll(async () => {
    await Promise.all(nodes.filter((n) => n !== null).map((n) => n.kill('SIGKILL')));
    await fake?.close();
    await tools?.close();
    await db?.drop();
  }, 60_000);

  /** Every answer with a 5xx status (but a run's documented 503 INTERRUPTED), with where it came from. */
  const serverErrors: string[] = [];
  let refused = 0; // requests to an instance that was down or died while answering
  const unanswered: string[] = [];

  async function call(method: string, path: string, body?: unknown, at?: Instance) {
    const live = nodes.filter((n): n is Instance => n !== null);
    const node = at ?? live[between(0, live.length)];
    if (!node) return null;
    try {
      const answer = apiOf({ baseUrl: node.url } as TestApp, method, path, body);
      // an answer the caller waits for forever is a bug too (a sync send waits on its run's end)
      const r = await Promise.race([answer, sleep(ANSWER_WITHIN_MS).then(() => null)]);
      if (!r) {
        unanswered.push(`${node.id} ${method} ${path}`);
        return null;
      }
      if (r.status >= 500 && r.body?.code !== 'INTERRUPTED')
        serverErrors.push(`${node.id} ${method} ${path} → ${r.status} ${JSON.stringify(r.body)}`);
      return r;
    } catch {
      refused++;
      return null;
    }
  }

  /** Scripted turns: the model asks for more than the rules allow, every batch. */
  function script() {
    fake.respond((req: any) => {
      const said = req.messages.filter((m: any) => !isHeartbeat(m));
      const text = String(said.filter((m: any) => m.role === 'user').at(-1)?.content ?? '');
      const roles: string[] = said.map((m: any) => m.role);
      const turns = roles.slice(roles.lastIndexOf('user')).filter((r) => r === 'assistant').length;
      const refund = (k: string, heartbeat = false) => ({
        name: 'refund',
        arguments: { q: `${text}/${k}`, ...(heartbeat ? { request_heartbeat: true } : {}) },
      });
      if (req.system.includes('soak-sink')) {
        // five refunds against a limit of 3, an exclusive pair, a deduped lookup (twice in one turn) and
        // a tool cooling down for longer than the test
        if (turns === 0)
          return {
            tool_calls: [
              refund('a'),
              { name: 'lookup', arguments: { q: 'same' } },
              { name: 'lookup', arguments: { q: 'same' } },
              { name: 'ex1', arguments: {} },
              { name: 'ping', arguments: {} },
              refund('b', true),
            ],
          };
        if (turns === 1)
          return {
            tool_calls: [
              refund('c'),
              { name: 'ex2', arguments: {} },
              { name: 'lookup', arguments: { q: 'same' } },
              refund('d'),
              refund('e'),
            ],
          };
      }
      if (req.system.includes('soak-consent') && turns === 0)
        return { tool_calls: [{ name: 'pay', arguments: { q: text } }, refund('x')] };
      return { content: `done:${text}` };
    });
  }

  it('rules, returns, runs and seq_ids stay exact while instances die and come back', async () => {
    if (skipReason) return;
    const first = nodes[0]!;
    const app = { baseUrl: first.url } as TestApp;
    await tools.declare(app, 'refund', { safety: 'side_effecting' });
    await tools.declare(app, 'pay', { safety: 'side_effecting' });
    for (const name of ['lookup', 'ex1', 'ex2', 'ping']) await tools.declare(app, name);
    // tools take a while, so that kills land while they run
    tools.handle(
      'refund',
      async (c) => (await sleep(between(20, 250)), { body: `ok:${String(c.arguments.q)}` }),
    );
    for (const name of ['pay', 'lookup', 'ex1', 'ex2', 'ping'])
      tools.handle(name, async () => (await sleep(between(5, 120)), { body: `ok:${name}` }));
    script();

    const sinks: string[] = [];
    for (let i = 0; i < SINKS; i++)
      sinks.push(
        await createAgent(app, fake, {
          system: `You are soak-sink ${i}.`,
          tools: ['refund', 'lookup', 'ex1', 'ex2', 'ping'],
          include_base_tools: false,
          tool_rules: [
            { type: 'max_count_per_step', tool_name: 'refund', max_count_limit: REFUND_LIMIT },
            { type: 'dedupe', tool_name: 'lookup', window_seconds: 600, mode: 'reject' },
            { type: 'exclusive_group', tools: ['ex1', 'ex2'] },
            { type: 'cooldown', tool_name: 'ping', seconds: 600 },
          ],
        }),
      );
    // the third one's refund needs the pay of its turn to have run: it is held while pay waits
    const consentAgents: string[] = [];
    for (let i = 0; i < 3; i++)
      consentAgents.push(
        await createAgent(app, fake, {
          system: `You are soak-consent ${i}.`,
          tools: ['pay', 'refund'],
          include_base_tools: false,
          tool_rules: [
            { type: 'requires_consent', tool_name: 'pay', scope: 'payments' },
            ...(i === 2
              ? [{ type: 'requires_preceding_tools', tool_name: 'refund', tools: ['pay'] }]
              : []),
          ],
        }),
      );
    const heldAgent = consentAgents[2];
    const agents = [...sinks, ...consentAgents];

    // ---- traffic: messages through both instances at once, the same agent from both
    type Sent = { agent: string; text: string; status: number | null; answer?: any };
    const sent: Sent[] = [];
    const inFlight: Promise<unknown>[] = [];
    let n = 0;
    const send = (agent: string) => {
      const text = `m${n++}`;
      const sync = random() < 0.3;
      const entry: Sent = { agent, text, status: null };
      sent.push(entry);
      inFlight.push(
        call('POST', `/v1/agents/${agent}/messages${sync ? '' : '/async'}`, {
          messages: [{ role: 'user', content: text }],
        }).then((r) => {
          entry.status = r?.status ?? null;
          if (sync && r?.status === 200) entry.answer = r.body;
        }),
      );
    };
    const wave = () => {
      for (const a of sinks) for (let k = 0; k < 3; k++) send(a);
      for (const a of consentAgents) send(a);
    };

    // ---- a person deciding the consent requests, from either instance
    let deciding = true;
    const decided = new Map<string, string>(); // request id → decision asked
    const decider = (async () => {
      while (deciding) {
        const agent = consentAgents[between(0, consentAgents.length)];
        const pending = await call('GET', `/v1/consent/requests?agent_id=${agent}`);
        for (const p of Array.isArray(pending?.body) ? pending.body : []) {
          if (decided.has(p.id)) continue;
          const decision = random() < 0.6 ? 'approve_once' : 'deny';
          const r = await call('POST', `/v1/consent/requests/${p.id}/decision`, { decision });
          if (r && r.status < 300) decided.set(p.id, decision);
        }
        await sleep(between(50, 250));
      }
    })();

    // ---- chaos: a wave, then at a random moment kill -9 one instance (or both) and start it again, or
    // stall one past its lease (SIGSTOP) and let it go on
    const chaos = { kills: 0, stalls: 0 };
    const restart = async (slot: number) => {
      const dying = nodes[slot]!;
      nodes[slot] = null;
      await dying.kill('SIGKILL');
      chaos.kills++;
      return async () => {
        // the same id takes its agents back at once; a new one leaves them to the lease's expiry
        const id = random() < 0.5 ? dying.id : `${dying.id.slice(0, 2)}r${++restarts}`;
        nodes[slot] = await boot(id);
      };
    };
    for (let round = 0; round < ROUNDS; round++) {
      wave();
      await sleep(between(200, 2500));
      const victim = between(0, 2);
      const move = random();
      if (move < 0.2) {
        const stalled = nodes[victim]!;
        stalled.pause();
        chaos.stalls++;
        await sleep(between(LEASE_MS + 500, LEASE_MS * 3));
        stalled.resume();
        continue;
      }
      const back = [await restart(victim)];
      if (move > 0.85) back.push(await restart(1 - victim));
      if (random() < 0.5 && back.length === 1) wave(); // sent while one instance is down
      await sleep(between(0, 1000));
      await Promise.all(back.map((start) => start()));
    }
    wave(); // and one more with both up

    // ---- drain: every send answered, every run ended, nothing waiting for a person
    const pg = new Client({ connectionString: db!.url });
    await pg.connect();
    try {
      const draining = Date.now();
      await Promise.all(inFlight);
      const deadline = Date.now() + 45_000;
      let open: any[] = [];
      for (;;) {
        open = (
          await pg.query(
            `SELECT r.id, r.agent_id, r.status FROM runs r WHERE r.agent_id = ANY($1)
             AND (r.status IN ('created', 'running') OR EXISTS (SELECT 1 FROM consent_requests c
               WHERE c.run_id = r.id AND c.status = 'pending'))`,
            [agents],
          )
        ).rows;
        if (open.length === 0 || Date.now() > deadline) break;
        await sleep(200);
      }
      deciding = false;
      await decider;
      const drained = Date.now() - draining;

      const violations: string[] = [];
      const bad = (s: string) => violations.push(s);
      for (const r of open) bad(`run ${r.id} of ${r.agent_id} never ended (${r.status})`);

      // -- the tool server: each call executed at most once
      const executions = new Map<string, number>();
      for (const c of tools.calls)
        executions.set(c.tool_call_id, (executions.get(c.tool_call_id) ?? 0) + 1);
      for (const [id, count] of executions)
        if (count > 1) bad(`tool call ${id} executed ${count} times`);

      // -- rule bounds, per batch and per agent
      const runs = (
        await pg.query(
          'SELECT id, agent_id, batch_id, status, stop_reason, error FROM runs WHERE agent_id = ANY($1)',
          [agents],
        )
      ).rows;
      const batchOf = new Map(runs.map((r) => [r.id, r.batch_id as string]));
      const tally = new Map<string, number>();
      const bump = (key: string) => tally.set(key, (tally.get(key) ?? 0) + 1);
      for (const c of tools.calls) {
        const origin = tools.origins.get(c.tool_call_id)!;
        const batch = batchOf.get(origin.run_id);
        if (c.name === 'refund' && sinks.includes(origin.agent_id)) bump(`refund|${batch}`);
        if (c.name === 'ex1' || c.name === 'ex2') bump(`group|${batch}`);
        if (c.name === 'lookup') bump(`lookup|${origin.agent_id}`);
        if (c.name === 'ping') bump(`ping|${origin.agent_id}`);
      }
      const limits: Record<string, number> = {
        refund: REFUND_LIMIT,
        group: 1,
        lookup: 1,
        ping: 1,
      };
      for (const [key, count] of tally)
        if (count > limits[key.split('|')[0]]) bad(`${key} executed ${count} times`);

      // -- consent: a pay call ran only once a person approved it
      const consent = (
        await pg.query(
          'SELECT tool_call_id, decision FROM consent_requests WHERE agent_id = ANY($1)',
          [consentAgents],
        )
      ).rows;
      const approved = new Set(
        consent.filter((c) => String(c.decision).startsWith('approve')).map((c) => c.tool_call_id),
      );
      for (const c of tools.calls)
        if (c.name === 'pay' && !approved.has(c.tool_call_id)) {
          bad(`pay ${c.tool_call_id} ran without an approval`);
          console.log(await story(pg, c.tool_call_id));
        }
      // a held refund ran only after the pay of its batch did
      const paidBatches = new Set(
        tools.calls
          .filter((c) => c.name === 'pay')
          .map((c) => batchOf.get(tools.origins.get(c.tool_call_id)!.run_id)),
      );
      for (const c of tools.calls) {
        const origin = tools.origins.get(c.tool_call_id)!;
        if (c.name === 'refund' && origin.agent_id === heldAgent)
          if (!paidBatches.has(batchOf.get(origin.run_id)))
            bad(`refund ${c.tool_call_id} of the held agent ran without its pay`);
      }

      // -- the history: seq_ids, batches contiguous, one return per call, each message stored once
      const rows = (
        await pg.query(
          `SELECT agent_id, seq_id, run_id, batch_id, message_type, payload FROM messages
           WHERE agent_id = ANY($1) ORDER BY agent_id, seq_id`,
          [agents],
        )
      ).rows.map((m) => ({
        ...m,
        seq_id: Number(m.seq_id),
        payload: typeof m.payload === 'string' ? JSON.parse(m.payload) : m.payload,
      }));
      const returns = new Map<string, any[]>();
      const calls = new Set<string>();
      const userTexts = new Map<string, number>();
      for (const agent of agents) {
        const mine = rows.filter((m) => m.agent_id === agent);
        mine.forEach((m, i) => {
          if (m.seq_id !== i + 1)
            bad(`${agent}: message ${i + 1} has seq_id ${m.seq_id} (gap or repeat)`);
        });
        const seenBatches = new Set<string>();
        let last: string | null = null;
        for (const m of mine) {
          if (m.batch_id && m.batch_id !== last) {
            if (seenBatches.has(m.batch_id))
              bad(`${agent}: batch ${m.batch_id} resumes at seq ${m.seq_id} after another batch`);
            seenBatches.add(m.batch_id);
            last = m.batch_id;
          }
        }
      }
      for (const m of rows) {
        if (m.payload._held) continue; // a held turn's rows, shown again once its end is known
        if (m.message_type === 'tool_call_message') calls.add(m.payload.tool_call.tool_call_id);
        if (m.message_type === 'tool_return_message') {
          const list = returns.get(m.payload.tool_call_id) ?? [];
          list.push(m.payload);
          returns.set(m.payload.tool_call_id, list);
        }
        if (m.message_type === 'user_message' && !isHeartbeat(m))
          userTexts.set(m.payload.content, (userTexts.get(m.payload.content) ?? 0) + 1);
      }
      for (const id of calls) {
        const got = returns.get(id) ?? [];
        if (got.length !== 1) bad(`call ${id} has ${got.length} stored returns`);
      }
      for (const [id, count] of executions) {
        const got = returns.get(id) ?? [];
        if (got.length !== 1) bad(`executed call ${id} has ${got.length} stored returns`);
        else if (got[0].tool_return === NOT_STARTED)
          bad(`executed call ${id} is stored as not run (${count} execution)`);
        else if (got[0].status !== 'success' && got[0].tool_return !== OUTCOME_UNKNOWN)
          bad(`executed call ${id} stored as ${got[0].tool_return}`);
      }
      // and an approved one ran (once, above), wherever its batch went on: or its process died once it
      // had claimed it (its return says the outcome is unknown: the request may not have reached the tool)
      for (const id of approved)
        if (!executions.has(id) && returns.get(id)?.[0]?.tool_return !== OUTCOME_UNKNOWN) {
          bad(`pay ${id} was approved and never ran`);
          console.log(await story(pg, id));
        }
      for (const s of sent) {
        const count = userTexts.get(s.text) ?? 0;
        const accepted = s.status !== null && s.status < 300;
        if (count > 1 || (accepted && count !== 1))
          bad(`message ${s.text} (answered ${s.status}) is stored ${count} times`);
      }
      // a sync answer is the run's stored end
      const runById = new Map(runs.map((r) => [r.id, r]));
      for (const s of sent) {
        if (!s.answer) continue;
        const stored = runById.get(s.answer.run_id);
        if (stored?.stop_reason !== s.answer.stop_reason.stop_reason)
          bad(
            `message ${s.text} was answered ${s.answer.stop_reason.stop_reason}, its run ${s.answer.run_id} stored ${stored?.status}/${stored?.stop_reason}`,
          );
      }
      for (const e of serverErrors) bad(`5xx: ${e}`);
      for (const e of unanswered) bad(`no answer within ${ANSWER_WITHIN_MS} ms: ${e}`);

      const unknown = [...returns.values()].filter(
        (l) => l[0]?.tool_return === OUTCOME_UNKNOWN,
      ).length;
      const byStatus = runs.reduce<Record<string, number>>((acc, r) => {
        const key = `${r.status}${r.error ? `/${r.error}` : ''}`;
        return { ...acc, [key]: (acc[key] ?? 0) + 1 };
      }, {});
      console.log(
        `scale-out soak: seed=${SEED} rounds=${ROUNDS} kills=${chaos.kills} stalls=${chaos.stalls} sent=${sent.length} ` +
          `refused=${refused} executions=${tools.calls.length} outcome_unknown=${unknown} ` +
          `decisions=${decided.size} drain_ms=${drained} runs=${JSON.stringify(byStatus)} violations=${violations.length}`,
      );
      // errors the instances logged: not an invariant, but each one is worth a look
      const logged = started.flatMap((node) =>
        node
          .output()
          .split('\n')
          // (answers with a 5xx are logged as errors too: checked above)
          .filter((l) => l.includes('"level":50') && !l.includes('"msg":"request"'))
          .map((l) => `${node.id}: ${l.slice(0, 400)}`),
      );
      if (logged.length) console.log(`errors logged:\n${logged.slice(0, 20).join('\n')}`);
      if (violations.length || process.env.SOAK_LOGS)
        for (const node of started) {
          const lines = node
            .output()
            .split('\n')
            .filter((l) => /error|warn/i.test(l));
          console.log(
            `${node.id} (${lines.length} error/warn lines):\n${lines.slice(-40).join('\n')}`,
          );
        }
      expect(violations).toEqual([]);
    } finally {
      await pg.end();
    }
  });
});
