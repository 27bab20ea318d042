import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { RunEventsBus } from '../../src/common/run-events';
import { TracingService } from '../../src/observability/tracing.service';
import { startApp, TestApp } from '../support/app-harness';
import { api, createAgent, LoopEnv, say, startLoopEnv } from '../support/processing-fixtures';
import { spawnServer } from '../support/server-process';

/** A scripted agent: one refused call (a rule), one that runs, then the answer. */
const agentWithRules = {
  tools: ['send_message', 'core_memory_append'],
  include_base_tools: false,
  tool_rules: [
    { type: 'max_count_per_step', tool_name: 'core_memory_append', max_count_limit: 1 },
    { type: 'exit_loop', tool_name: 'send_message' },
  ],
  memory_blocks: [{ label: 'notes', value: '' }],
  model_script: [
    {
      tool_calls: [
        { name: 'core_memory_append', arguments: { label: 'notes', content: 'a' } },
        { name: 'core_memory_append', arguments: { label: 'notes', content: 'b' } },
      ],
    },
    { tool_calls: [{ name: 'send_message', arguments: { message: 'done' } }] },
  ],
};

const metricValue = (text: string, series: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(series + ' '));
  return line ? Number(line.slice(series.length + 1)) : 0;
};

describe('observability: metrics, traces, readiness', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({ overrides: { observability: { tracing: { exporter: 'memory' } } } });
  });
  afterAll(() => t.close());

  it('/metrics counters move as a scripted conversation runs', async () => {
    const before = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const agentId = await createAgent(t, null, agentWithRules);
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('note it'));
    // send_message's exit_loop without a heartbeat request ends the turn (Letta's MemGPT loop)
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    const after = await (await fetch(`${t.baseUrl}/metrics`)).text();
    const delta = (series: string) => metricValue(after, series) - metricValue(before, series);
    expect(delta('agent_runs_total{status="completed",stop_reason="end_turn"}')).toBe(1);
    expect(delta('agent_steps_total{model="scripted/scripted"}')).toBe(2);
    expect(
      delta(
        'agent_tool_calls_total{tool="core_memory_append",outcome="executed",status="success"}',
      ),
    ).toBe(1);
    expect(
      delta('agent_tool_refusals_total{tool="core_memory_append",rule="max_count_per_step"}'),
    ).toBe(1);
    expect(after).toMatch(/^agent_consent_pending \d+$/m);
    expect(after).toMatch(/^agent_mailbox_depth 0$/m);
    expect(delta('agent_db_transaction_seconds_count')).toBeGreaterThan(0);
    expect(after).toMatch(/^agent_model_call_seconds_count\{model="scripted\/scripted"\} \d+$/m);
  });

  it("a run's trace has the spans run → step → model call → tool, with the refusal as an event", async () => {
    const exporter = t.app.get(TracingService).exporter!;
    exporter.reset();
    const agentId = await createAgent(t, null, agentWithRules);
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('note it'));
    const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId);
    const run = spans.find(
      (s) => s.name === 'run' && s.attributes['agent.run_id'] === res.body.run_id,
    )!;
    expect(run.attributes).toMatchObject({ 'agent.stop_reason': 'end_turn', 'agent.steps': 2 });
    const inTrace = spans.filter((s) => s.spanContext().traceId === run.spanContext().traceId);
    const parentOf = (s: ReadableSpan) =>
      inTrace.find((p) => p.spanContext().spanId === s.parentSpanContext?.spanId)?.name;
    const steps = inTrace.filter((s) => s.name === 'step');
    expect(steps).toHaveLength(2);
    steps.forEach((s) => expect(parentOf(s)).toBe('run'));
    const models = inTrace.filter((s) => s.name === 'model call');
    expect(models).toHaveLength(2);
    models.forEach((s) => expect(parentOf(s)).toBe('step'));
    expect(models[0].attributes['gen_ai.request.model']).toBe('scripted/scripted');
    const tools = inTrace.filter((s) => s.name === 'tool core_memory_append');
    expect(tools.map((s) => s.attributes['agent.tool.outcome']).sort()).toEqual([
      'executed',
      'refused',
    ]);
    tools.forEach((s) => expect(parentOf(s)).toBe('step'));
    const refused = tools.find((s) => s.attributes['agent.tool.outcome'] === 'refused')!;
    expect(refused.events[0]).toMatchObject({
      name: 'rule verdict',
      attributes: { rule: 'max_count_per_step' },
    });
  });

  it('readiness is 200 when the database answers, and 503 while it is unavailable', async () => {
    const other = await startApp();
    try {
      const ok = await api(other, 'GET', '/v1/health/ready');
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({
        status: 'ready',
        checks: { database: 'up', events: 'up', migrations: 'done', recovery: 'done' },
      });
      await other.app.get(DataSource).destroy();
      const down = await api(other, 'GET', '/v1/health/ready');
      expect(down.status).toBe(503);
      expect(down.body).toMatchObject({ status: 'not_ready', checks: { database: 'down' } });
      // liveness stays 200 (the process is alive and says what it misses): no restart loop
      const live = await api(other, 'GET', '/v1/health/');
      expect(live.status).toBe(200);
      expect(live.body).toMatchObject({ status: 'degraded', database: 'down' });
    } finally {
      // the database is gone: closing may fail, but the responses must still match the document
      await other.close().catch((e: Error) => {
        if (e.message.includes('/openapi.json')) throw e;
      });
    }
  });
});

describe('observability: whatever the model endpoint reports, the process lives on', () => {
  let env: LoopEnv;
  beforeAll(async () => {
    env = await startLoopEnv();
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  /** Lets the timers run: rxjs rethrows a subscriber's exception on one, where it ended the process. */
  const tick = () => new Promise((r) => setTimeout(r, 50));
  const metrics = async () => (await fetch(`${env.t.baseUrl}/metrics`)).text();

  it.each<[string, Record<string, number>]>([
    ['negative', { prompt_tokens: -5, completion_tokens: 1, total_tokens: -4 }],
    ['fractional', { prompt_tokens: 0.5, completion_tokens: 2.6, total_tokens: 3.1 }],
    ['astronomical', { prompt_tokens: 1e308, completion_tokens: 1e308, total_tokens: 1e308 }],
  ])(
    '%s token counts: the run ends normally with whole counts, and /metrics counts them',
    async (_n, usage) => {
      const { t, fake } = env;
      const agentId = await createAgent(t, fake);
      fake.push({ content: 'hello', usage });
      const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('hi'));
      expect(res.status).toBe(200);
      expect(res.body.stop_reason.stop_reason).toBe('end_turn');
      await tick();
      const run = (await api(t, 'GET', `/v1/runs/${res.body.run_id}/usage`)).body;
      for (const k of ['prompt_tokens', 'completion_tokens', 'total_tokens']) {
        expect(Number.isInteger(run[k])).toBe(true);
        expect(run[k]).toBeGreaterThanOrEqual(0);
        expect(run[k]).toBeLessThanOrEqual(2e12);
      }
      expect(run.total_tokens).toBeGreaterThanOrEqual(run.prompt_tokens + run.completion_tokens);
      const text = await metrics();
      expect(text).toMatch(/^agent_model_tokens_total\{model="openai\/fake",kind="prompt"\} \d+$/m);
      expect((await api(t, 'GET', '/v1/health/')).status).toBe(200);
    },
  );

  it('tool names the model invents are counted as <unknown>, never as labels of their own', async () => {
    const { t, fake } = env;
    const agentId = await createAgent(t, fake);
    const invented = Array.from({ length: 20 }, (_, i) => `made_up_${i}_${'x'.repeat(5000)}`);
    fake.push(
      { tool_calls: invented.map((name) => ({ name, arguments: {} })) },
      { content: 'done' },
    );
    const before = await metrics();
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('hi'));
    expect(res.body.stop_reason.stop_reason).toBe('end_turn');
    const after = await metrics();
    expect(after).not.toContain('made_up_');
    const series = 'agent_tool_calls_total{tool="<unknown>",outcome="refused",status="error"}';
    expect(metricValue(after, series) - metricValue(before, series)).toBe(20);
    expect(
      metricValue(after, 'agent_tool_refusals_total{tool="<unknown>",rule="NotFound"}') -
        metricValue(before, 'agent_tool_refusals_total{tool="<unknown>",rule="NotFound"}'),
    ).toBe(20);
    expect(after.length - before.length).toBeLessThan(2000);
  });

  it('a subscriber of the run events that throws is logged; the run and the other subscribers go on', async () => {
    const { t, fake } = env;
    const bus = t.app.get(RunEventsBus);
    const seen: string[] = [];
    const subs = [
      bus.local$.subscribe(() => {
        throw new Error('a broken observer');
      }),
      bus.events$.subscribe(() => {
        throw new Error('another broken observer');
      }),
      bus.local$.subscribe((e) => seen.push(e.type)),
    ];
    try {
      const agentId = await createAgent(t, fake);
      fake.push({ content: 'hello' });
      const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('hi'));
      expect(res.body.stop_reason.stop_reason).toBe('end_turn');
      await tick();
      expect(seen).toContain('run.completed');
      expect((await api(t, 'GET', '/v1/health/')).status).toBe(200);
    } finally {
      subs.forEach((s) => s.unsubscribe());
    }
  });
});

describe('observability: /metrics with API keys', () => {
  it('answers only the operator metrics token, never a tenant key', async () => {
    const t = await startApp({
      overrides: {
        auth: { api_keys: [{ key: 'sk-a', tenant: 'a' }] },
        observability: { metrics: { token: 'ops-secret' } },
      },
    });
    try {
      const get = (auth?: string) =>
        fetch(`${t.baseUrl}/metrics`, auth ? { headers: { authorization: auth } } : {});
      expect((await get()).status).toBe(401);
      expect((await get('Bearer sk-a')).status).toBe(401);
      const ok = await get('Bearer ops-secret');
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain('agent_runs_total');
    } finally {
      await t.close();
    }
  });
});

describe('observability: the log of a real server process', () => {
  it('says what it runs on, logs each request, and explains a failed run without leaking its key', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-server-logs-'));
    writeFileSync(path.join(dir, 'local.yaml'), 'models:\n  openai:\n    max_retries: 0\n');
    const server = spawnServer({
      env: {
        CONFIG_FILE: path.join(dir, 'local.yaml'),
        SQLITE_PATH: path.join(dir, 'db.sqlite'),
        AGENTS_DIR: path.join(dir, 'agents'),
        TOOLS_DIR: path.join(dir, 'tools'),
        LOG_FORMAT: 'json',
        OPENAI_API_KEY: 'sk-operator-secret-123',
        OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', // nothing listens there: the model call fails
      },
    });
    const out = () => server.stdout();
    const lines = () =>
      out()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    const waitFor = async (pred: (l: Record<string, unknown>) => boolean) => {
      for (let i = 0; i < 600; i++) {
        const hit = lines().find(pred);
        if (hit) return hit;
        if (!server.alive()) throw new Error(`server exited: ${server.output()}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no such log line in: ${out()}`);
    };
    try {
      const boot = await waitFor((l) => String(l.msg).startsWith('listening on '));
      expect(boot.msg).toMatch(
        /^listening on http:\/\/\S+ \(version \d+\.\d+\.\d+; SQLite .*db\.sqlite, \d+ migrations applied; open mode, no API keys\)$/,
      );
      const url = /listening on (\S+)/.exec(String(boot.msg))![1].replace('[::1]', '127.0.0.1');
      const post = (p: string, body: unknown) =>
        fetch(url + p, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-request-id': 'req-abc' },
          body: JSON.stringify(body),
        });
      const agent = (await (
        await post('/v1/agents/', { name: 'a', model: 'openai/gpt-4o-mini' })
      ).json()) as {
        id: string;
      };
      await post(`/v1/agents/${agent.id}/messages`, {
        messages: [{ role: 'user', content: 'hi' }],
      });
      const ended = await waitFor((l) => l.msg === 'run ended');
      expect(ended).toMatchObject({
        level: 40,
        context: 'Runs',
        agent_id: agent.id,
        status: 'failed',
        stop_reason: 'llm_api_error',
        steps: 0,
      });
      expect(String(ended.error)).not.toBe('');
      const request = await waitFor((l) => l.msg === 'request' && l.req_id === 'req-abc');
      expect(request).toMatchObject({
        method: 'POST',
        path: '/v1/agents/',
        status: 200,
        tenant: 'default',
      });
      expect(server.output()).not.toContain('sk-operator-secret-123');
      // a decision URL's token is its credential: the line names the route, not the token
      await post('/v1/webhooks/decisions/token-that-must-not-be-logged', {});
      const decision = await waitFor(
        (l) => l.msg === 'request' && String(l.path).startsWith('/v1/webhooks/decisions/'),
      );
      expect(decision.path).toBe('/v1/webhooks/decisions/[redacted]');
      expect(server.output()).not.toContain('token-that-must-not-be-logged');
      expect(out()).not.toContain('Mapped {'); // route chatter is debug
    } finally {
      await server.kill('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000); // a real server process under ts-node: slow to boot on a loaded machine
});
