/* eslint-disable @typescript-eslint/no-explicit-any */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Letta from '@letta-ai/letta-client';
import { MessagingService } from '../../src/processing/messaging.service';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { startReceivers, until } from '../support/receivers';
import {
  api,
  createAgent,
  LoopEnv,
  runEnded as waitForRun,
  say,
  startLoopEnv,
  ToolServer,
  types,
} from '../support/processing-fixtures';

/** Streaming, async, history, runs, cancellation and the mailbox, through the SDK and raw HTTP. */
describe('messages API', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;
  let client: Letta;

  beforeAll(async () => {
    env = await startLoopEnv(['lookup', 'slow']);
    ({ t, fake, tools } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const agent = (over: Record<string, unknown> = {}) =>
    createAgent(t, fake, { tools: ['lookup', 'slow'], include_base_tools: false, ...over });

  const runEnded = (runId: string) => waitForRun(t, runId);
  /** The `data:` payloads of an SSE body, in order (`[DONE]` last). */
  const sseData = (text: string) =>
    text
      .split('\n\n')
      .filter(Boolean)
      .map((f) => f.replace(/^data: /, ''));

  it('stream: one unnamed data frame per message, stop reason, usage, [DONE]; progress only on request', async () => {
    const id = await agent();
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'a', request_heartbeat: true } }] },
      { content: 'streamed answer' },
    );
    const res = await fetch(`${t.baseUrl}/v1/agents/${id}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...say('hi'), include_progress: true }),
    });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const text = await res.text();
    expect(text).not.toMatch(/^event:/m);
    const frames = sseData(text);
    expect(frames.at(-1)).toBe('[DONE]');
    const parsed = frames.slice(0, -1).map((f) => JSON.parse(f));
    const kinds = parsed.map((p) => p.message_type).filter((k) => k !== 'progress');
    // the heartbeat the run wrote is history only, as Letta's streams leave it out
    expect(kinds).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    const runMessages = (await api(t, 'GET', `/v1/runs/${parsed[0].run_id}/messages`)).body;
    expect(types(runMessages)).toContain('user_message');
    const progress = parsed.filter((p) => p.message_type === 'progress');
    expect(progress.map((p) => p.event)).toEqual(
      expect.arrayContaining(['run.started', 'step.started', 'tools.executing']),
    );
    expect(progress.find((p) => p.event === 'step.started').step).toBe(1);

    // without the flag only Letta's frame types: clients validate frames against that union
    fake.push({ content: 'plain' });
    const plain = await fetch(`${t.baseUrl}/v1/agents/${id}/messages/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(say('again')),
    });
    const plainKinds = sseData(await plain.text())
      .slice(0, -1)
      .map((f) => JSON.parse(f).message_type);
    expect(plainKinds).toEqual(['assistant_message', 'stop_reason', 'usage_statistics']);
  });

  it('stream through the SDK, and streaming: true on the plain endpoint', async () => {
    const id = await agent();
    fake.push({ content: 'one' }, { content: 'two' });
    const stream = await client.agents.messages.stream(id, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const seen: any[] = [];
    for await (const chunk of stream) seen.push(chunk);
    expect(seen.map((c) => c.message_type).filter((k) => k !== 'progress')).toEqual([
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);

    const viaCreate: any = await client.agents.messages.create(id, {
      messages: [{ role: 'user', content: 'again' }],
      streaming: true,
    } as any);
    const chunks: any[] = [];
    for await (const c of viaCreate) chunks.push(c);
    expect(chunks.find((c) => c.message_type === 'assistant_message').content).toBe('two');
  });

  it('stream_tokens: the text arrives as several assistant_message chunks sharing the stored id', async () => {
    const id = await agent();
    fake.push(
      {
        content: 'let me look that up',
        tool_calls: [{ name: 'lookup', arguments: { q: 'a', request_heartbeat: true } }],
      },
      { content: 'found it for you' },
    );
    const stream = await client.agents.messages.stream(id, {
      messages: [{ role: 'user', content: 'hi' }],
      stream_tokens: true,
    });
    const seen: any[] = [];
    for await (const chunk of stream) seen.push(chunk);
    expect(fake.requests.every((r) => r.stream)).toBe(true);
    const frames = seen.filter((c) => c.message_type !== 'progress');
    const texts = frames.filter((c) => c.message_type === 'assistant_message');
    // the fake model sends each text in several deltas: one frame per delta, none repeated whole
    const ids = [...new Set(texts.map((c) => c.id))];
    expect(ids).toHaveLength(2);
    const textOf = (mid: string) =>
      texts
        .filter((c) => c.id === mid)
        .map((c) => c.content)
        .join('');
    expect(texts.filter((c) => c.id === ids[0]).length).toBeGreaterThan(1);
    expect(ids.map(textOf)).toEqual(['let me look that up', 'found it for you']);
    // tool messages stay whole, in order between the two texts
    expect(frames.map((c) => c.message_type).filter((k, i, all) => k !== all[i - 1])).toEqual([
      'assistant_message',
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    // the chunks carry the id the stored message has
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    const stored = history.filter((m: any) => m.message_type === 'assistant_message');
    expect(stored.map((m: any) => [m.id, m.content])).toEqual([
      [ids[0], 'let me look that up'],
      [ids[1], 'found it for you'],
    ]);
  });

  it('stream_tokens with streaming: true on the plain endpoint; refused without streaming (as Letta)', async () => {
    const id = await agent();
    fake.push({ content: 'chunked reply' });
    const res = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('hi', { streaming: true, stream_tokens: true }),
    );
    const frames = sseData(String(res.body))
      .filter((f) => f.startsWith('{'))
      .map((f) => JSON.parse(f))
      .filter((f) => f.message_type === 'assistant_message');
    expect(frames.length).toBeGreaterThan(1);
    expect(new Set(frames.map((f) => f.id)).size).toBe(1);
    expect(frames.map((f) => f.content).join('')).toBe('chunked reply');

    const sync = await api(
      t,
      'POST',
      `/v1/agents/${id}/messages`,
      say('again', { stream_tokens: true }),
    );
    expect([sync.status, sync.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    expect(fake.requests.map((r) => r.stream)).toEqual([true]);
  });

  it('background stream resumed with POST /v1/runs/{id}/stream after the last seq_id seen', async () => {
    const id = await agent();
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    tools.handle('slow', async () => {
      await released;
      return { body: 'slow result' };
    });
    fake.push(
      { tool_calls: [{ name: 'slow', arguments: { request_heartbeat: true } }] },
      { content: 'after the tool' },
    );
    const first = await client.agents.messages.stream(id, {
      messages: [{ role: 'user', content: 'go' }],
      background: true,
    });
    let seen: any = null;
    for await (const chunk of first) {
      seen = chunk; // the tool call; then the client drops the connection
      break;
    }
    expect(seen.message_type).toBe('tool_call_message');
    // the request's flag is the run's (Letta's Run.background)
    expect((await api(t, 'GET', `/v1/runs/${seen.run_id}`)).body.background).toBe(true);
    const resumed = await client.runs.messages.stream(seen.run_id, {
      starting_after: seen.seq_id,
    });
    release();
    const rest: any[] = [];
    for await (const chunk of resumed) rest.push(chunk);
    expect(rest.map((c) => c.message_type)).toEqual([
      'tool_return_message', // (the heartbeat is history only)
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    // a finished run replays from the database
    const again: any[] = [];
    for await (const chunk of await client.runs.messages.stream(seen.run_id, {})) again.push(chunk);
    expect(again.map((c) => c.message_type)).toEqual([
      'tool_call_message',
      ...rest.map((c) => c.message_type),
    ]);
  });

  it('async: the run is stored and answered at once, then processed', async () => {
    const id = await agent();
    fake.push({ content: 'later' });
    const res = await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('hi'));
    expect(res.status).toBe(202);
    expect(res.body.id).toMatch(/^run-/);
    expect(['created', 'running', 'completed']).toContain(res.body.status);
    const run = await runEnded(res.body.id);
    expect(run).toMatchObject({ status: 'completed', stop_reason: 'end_turn', agent_id: id });
    const msgs = await api(t, 'GET', `/v1/runs/${res.body.id}/messages`);
    expect(types(msgs.body)).toEqual(['user_message', 'assistant_message']);
    const sdkRun: any = await client.runs.retrieve(res.body.id);
    expect(sdkRun.status).toBe('completed');
  });

  it("async with Letta's callback_url: one POST of the ended run, its answer recorded on the run", async () => {
    const got: { body: any; headers: Record<string, unknown> }[] = [];
    const target = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        got.push({ body: JSON.parse(body), headers: req.headers });
        res.statusCode = 204;
        res.end();
      });
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(target.address() as AddressInfo).port}/done`;
      const id = await agent();
      fake.push({ content: 'later' });
      const res = await client.agents.messages.createAsync(id, {
        messages: [{ role: 'user', content: 'hi' }],
        callback_url: url,
      });
      expect((res as any).callback_url).toBe(url);
      let run: any;
      do {
        await new Promise((r) => setTimeout(r, 10));
        run = await client.runs.retrieve(res.id);
      } while (!run.callback_sent_at);
      expect(run).toMatchObject({
        callback_url: url,
        callback_status_code: 204,
        callback_error: null,
      });
      expect(got).toHaveLength(1);
      expect(got[0].body).toMatchObject({
        job_id: res.id,
        run_id: res.id,
        agent_id: id,
        status: 'completed',
        stop_reason: 'end_turn',
        completed_at: run.completed_at,
      });
      const bad = await api(t, 'POST', `/v1/agents/${id}/messages/async`, {
        ...say('x'),
        callback_url: 'file:///etc/passwd',
      });
      expect([bad.status, bad.body.details.problems[0].path]).toEqual([400, 'callback_url']);
      // a tenant aiming its callback at the cloud metadata address: refused by the outbound policy
      fake.push({ content: 'again' });
      const metadata = await client.agents.messages.createAsync(id, {
        messages: [{ role: 'user', content: 'hi' }],
        callback_url: 'http://169.254.169.254/latest/meta-data/',
      });
      let refused: any;
      do {
        await new Promise((r) => setTimeout(r, 10));
        refused = await client.runs.retrieve(metadata.id);
      } while (!refused.callback_sent_at);
      expect(refused).toMatchObject({
        callback_status_code: null,
        callback_error: 'refused: 169.254.169.254 is denied by the outbound host policy',
      });
    } finally {
      target.closeAllConnections();
      await new Promise((r) => target.close(r));
    }
  });

  it('history: seq_id, limit, order, before/after cursors; runs list by agent', async () => {
    const id = await agent();
    for (const n of [1, 2, 3]) {
      fake.push({ content: `answer ${n}` });
      await api(t, 'POST', `/v1/agents/${id}/messages`, say(`question ${n}`));
    }
    const all = (await api(t, 'GET', `/v1/agents/${id}/messages`)).body;
    expect(all).toHaveLength(6);
    expect(all.map((m: any) => m.seq_id)).toEqual([6, 5, 4, 3, 2, 1]); // default desc
    const asc = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=2`)).body;
    expect(asc.map((m: any) => m.content)).toEqual(['question 1', 'answer 1']);
    const after = (
      await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&after=${asc[1].id}&limit=2`)
    ).body;
    expect(after.map((m: any) => m.content)).toEqual(['question 2', 'answer 2']);
    // cursors are relative to the order: with desc (the default), `after` walks to older messages
    const older = (await api(t, 'GET', `/v1/agents/${id}/messages?after=${after[0].id}`)).body;
    expect(older.map((m: any) => m.seq_id)).toEqual([2, 1]);
    const newer = (await api(t, 'GET', `/v1/agents/${id}/messages?before=${after[0].id}`)).body;
    expect(newer.map((m: any) => m.seq_id)).toEqual([6, 5, 4]);
    expect((await api(t, 'GET', `/v1/agents/${id}/messages?limit=0`)).status).toBe(400);
    expect((await api(t, 'GET', `/v1/agents/${id}/messages?order=up`)).status).toBe(400);
    // a cursor that is none of its messages: 400, never the first page again (auto-paging would not end)
    const bad = await api(t, 'GET', `/v1/agents/${id}/messages?after=garbage`);
    expect([bad.status, bad.body.code]).toEqual([400, 'UNKNOWN_CURSOR']);

    const runs = (await api(t, 'GET', `/v1/runs/?agent_id=${id}`)).body;
    expect(runs).toHaveLength(3);
    expect(runs.every((r: any) => r.status === 'completed')).toBe(true);
    const steps = (await api(t, 'GET', `/v1/runs/${runs[0].id}/steps`)).body;
    expect(steps).toHaveLength(1);
    expect((await api(t, 'GET', '/v1/runs/run-00000000-0000-0000-0000-000000000000')).status).toBe(
      404,
    );
    expect((await api(t, 'GET', '/v1/runs/nope')).status).toBe(404);
  });

  it('cancel mid-tool: the tool gets the abort, the run ends cancelled, the call has an error return', async () => {
    const id = await agent();
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    // the tool server may see the hang-up after the run's answer arrived (two sockets): wait for it
    let sawAbort!: () => void;
    const toolSawAbort = new Promise<void>((r) => (sawAbort = r));
    tools.handle('slow', async (_call, hungUp) => {
      started();
      await hungUp;
      sawAbort();
      return { body: 'too late' };
    });
    fake.push({ tool_calls: [{ name: 'slow', arguments: {} }] }, { content: 'never asked' });
    const pending = api(t, 'POST', `/v1/agents/${id}/messages`, say('go'));
    await toolStarted;
    const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {});
    expect(cancel.status).toBe(200);
    const res = (await pending).body;
    expect(Object.keys(cancel.body)).toEqual([res.run_id]);
    expect(res.stop_reason.stop_reason).toBe('cancelled');
    const ret = res.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.status).toBe('error');
    await toolSawAbort;
    expect(fake.requests).toHaveLength(1);
    expect((await api(t, 'GET', `/v1/runs/${res.run_id}`)).body.status).toBe('cancelled');
    // nothing running any more: an empty answer, as Letta's
    const again = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {});
    expect([again.status, again.body]).toEqual([200, {}]);
    // named runs are answered as Letta's server does: an ended one is cancelled (idempotent), an
    // unknown one (or another agent's) failed
    const other = await agent();
    const named = await api(t, 'POST', `/v1/agents/${other}/messages/cancel`, {
      run_ids: [res.run_id],
    });
    expect(named.body).toEqual({ [res.run_id]: 'failed' });
    const own = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {
      run_ids: [res.run_id, 'run-00000000-0000-4000-8000-000000000000', res.run_id],
    });
    expect([own.status, own.body]).toEqual([
      200,
      { [res.run_id]: 'cancelled', 'run-00000000-0000-4000-8000-000000000000': 'failed' },
    ]);
    expect((await api(t, 'GET', `/v1/runs/${res.run_id}`)).body.status).toBe('cancelled');
    // an id that is an Object key of its own is answered like any other (it was left out: {})
    const proto = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {
      run_ids: ['__proto__', 'constructor'],
    });
    expect(JSON.stringify(proto.body)).toBe('{"__proto__":"failed","constructor":"failed"}');
    const tooMany = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {
      run_ids: Array.from({ length: 101 }, (_, i) => `run-${i}`),
    });
    expect([tooMany.status, tooMany.body.code]).toEqual([400, 'LIMIT_EXCEEDED']);
  });

  it('cancel while the model is thinking: the stream ends cancelled, its answer is never stored, the agent takes its next message', async () => {
    const id = await agent();
    fake.push({ content: 'too late', delayMs: 20_000 }); // released when the server hangs up
    const streamed = api(t, 'POST', `/v1/agents/${id}/messages/stream`, say('hello'));
    await fake.waitForRequests(1);
    const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {});
    expect(Object.values(cancel.body)).toEqual(['cancelled']);
    const frames = sseData((await streamed).body as string).map((f) =>
      f === '[DONE]' ? f : JSON.parse(f).message_type,
    );
    expect(frames).toEqual(['stop_reason', 'usage_statistics', '[DONE]']);
    expect(sseData((await streamed).body as string)[0]).toContain('"stop_reason":"cancelled"');
    const [runId] = Object.keys(cancel.body);
    expect((await api(t, 'GET', `/v1/runs/${runId}`)).body).toMatchObject({
      status: 'cancelled',
      stop_reason: 'cancelled',
    });
    fake.push({ content: 'next one' });
    const next = await api(t, 'POST', `/v1/agents/${id}/messages`, say('again'));
    expect(next.body.messages.map((m: any) => m.content)).toEqual(['next one']);
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.map((m: any) => m.content)).toEqual(['hello', 'again', 'next one']);
  });

  it("cancel a queued run: it never starts, and its callback_url is told it was cancelled (as Letta's)", async () => {
    const rx = await startReceivers(new Set());
    const id = await agent();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started!: () => void;
    const toolStarted = new Promise<void>((r) => (started = r));
    tools.handle('slow', async () => {
      started();
      await gate;
      return { body: 'done' };
    });
    fake.push({ tool_calls: [{ name: 'slow', arguments: {} }] });
    const first = api(t, 'POST', `/v1/agents/${id}/messages`, say('one'));
    await toolStarted;
    const queued = await api(t, 'POST', `/v1/agents/${id}/messages/async`, {
      ...say('two'),
      callback_url: rx.url('/cancelled'),
    });
    const cancel = await api(t, 'POST', `/v1/agents/${id}/messages/cancel`, {
      run_ids: [queued.body.id],
    });
    expect(cancel.body).toEqual({ [queued.body.id]: 'cancelled' });
    release();
    expect((await first).body.stop_reason.stop_reason).toBe('end_turn');
    const run = await runEnded(queued.body.id);
    expect(run.status).toBe('cancelled');
    expect(fake.requests).toHaveLength(1);
    await until(() => rx.bodies.length === 1);
    await rx.close();
    expect(JSON.parse(rx.bodies[0].body)).toMatchObject({
      run_id: queued.body.id,
      status: 'cancelled',
      stop_reason: 'cancelled',
      completed_at: run.completed_at,
    });
  });

  it('a message arriving while the agent is being taken waits behind the runs being taken with it', async () => {
    // with leases (PostgreSQL), the first message takes the agent, then queues its stored runs; a second
    // message that found the lease already held was queued at once and ran first
    const id = await agent();
    fake.respond((req) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      return { content: `echo ${last.content}` };
    });
    const messaging: { adopt: (agentId: string) => Promise<void> } =
      t.app.get<any>(MessagingService);
    const adopt = messaging.adopt.bind(messaging);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const slow = jest.spyOn(messaging, 'adopt').mockImplementation(async (agentId) => {
      await held;
      return adopt(agentId);
    });
    try {
      const first = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('m0'))).body.id;
      const second = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('m1'))).body.id;
      release();
      await runEnded(first);
      await runEnded(second);
    } finally {
      slow.mockRestore();
    }
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.map((m: any) => m.content)).toEqual(['m0', 'echo m0', 'm1', 'echo m1']);
  });

  it('concurrent messages to one agent: processed one at a time, in order, none lost', async () => {
    const id = await agent();
    fake.respond((req) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      return { content: `echo ${last.content}` };
    });
    const runs: string[] = [];
    for (let i = 0; i < 6; i++) {
      runs.push((await api(t, 'POST', `/v1/agents/${id}/messages/async`, say(`m${i}`))).body.id);
    }
    for (const r of runs) await runEnded(r);
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.map((m: any) => m.content)).toEqual(
      [0, 1, 2, 3, 4, 5].flatMap((i) => [`m${i}`, `echo m${i}`]),
    );
  });

  it('behind a running batch, sync, streamed and async sends wait in arrival order, one batch at a time', async () => {
    const id = await agent();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    fake.respond(async (req) => {
      const last = req.messages.filter((m: any) => m.role === 'user').at(-1);
      if (last.content === 'm0') await held;
      return { content: `echo ${last.content}` };
    });
    const queued = async (n: number) => {
      for (;;) {
        const runs = await api(t, 'GET', `/v1/runs/?agent_id=${id}&statuses=created`);
        if (runs.body.length === n) return;
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const first = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('m0'))).body.id;
    await fake.waitForRequests(1); // m0's batch is running, its model call held
    const sync = api(t, 'POST', `/v1/agents/${id}/messages`, say('m1'));
    await queued(1);
    const streamed = api(t, 'POST', `/v1/agents/${id}/messages/stream`, say('m2'));
    await queued(2);
    const last = (await api(t, 'POST', `/v1/agents/${id}/messages/async`, say('m3'))).body.id;
    await queued(3);
    release();
    const [s1, s2] = await Promise.all([sync, streamed]);
    await runEnded(first);
    await runEnded(last);
    expect(s1.body.messages.map((m: any) => m.content)).toEqual(['echo m1']);
    expect(s2.body).toContain('echo m2');
    // the model saw each message once, in order: no batch started before the one ahead had ended
    expect(
      fake.requests.map((r) => r.messages.filter((m: any) => m.role === 'user').at(-1).content),
    ).toEqual(['m0', 'm1', 'm2', 'm3']);
    const history = (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc`)).body;
    expect(history.map((m: any) => m.content)).toEqual(
      [0, 1, 2, 3].flatMap((i) => [`m${i}`, `echo m${i}`]),
    );
  });

  it('many agents are processed in parallel', async () => {
    const ids = await Promise.all([1, 2, 3, 4].map(() => agent()));
    let release!: () => void;
    const allArrived = new Promise<void>((r) => (release = r));
    let arrived = 0;
    // every model call is held until all four agents are inside one: only parallel processing gets there
    fake.respond(async () => {
      if (++arrived === 4) release();
      await allArrived;
      return { content: 'together' };
    });
    const results = await Promise.all(
      ids.map((id) => api(t, 'POST', `/v1/agents/${id}/messages`, say('go'))),
    );
    expect(results.map((r) => r.body.stop_reason.stop_reason)).toEqual([
      'end_turn',
      'end_turn',
      'end_turn',
      'end_turn',
    ]);
  });
});
