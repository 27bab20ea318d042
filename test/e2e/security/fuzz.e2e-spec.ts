/* eslint-disable @typescript-eslint/no-explicit-any -- fuzzed bodies and answers are free-form JSON */
import fc from 'fast-check';
import { startApp, TestApp } from '../../support/app-harness';
import { api, WsClient } from '../consent-helpers';

/**
 * Issue 8, the fuzz test: every write endpoint (POST/PUT/PATCH/DELETE, read from the router, so routes added
 * later are covered without editing this file) and every WebSocket frame type, fed hostile values. Nothing
 * may answer 5xx (a 502 from an unreachable upstream, with its own code, is the upstream's failure); every
 * 4xx is `{code, message, details}`; every WebSocket error frame has a code and a message and is never
 * INTERNAL, and the connection stays usable. Bounded: a few runs per route, seeded, no shrinking; a deeper
 * search: `FUZZ_RUNS=80 FUZZ_SEED=$RANDOM npx jest --runInBand test/e2e/security/fuzz`.
 */
describe('security: fuzz every write endpoint and WebSocket frame', () => {
  let t: TestApp;
  const pools: Record<string, string[]> = {};
  const RUNS_PER_ROUTE = Number(process.env.FUZZ_RUNS ?? 10);
  const SEED = Number(process.env.FUZZ_SEED ?? 8_2026);

  beforeAll(async () => {
    t = await startApp({
      checkRequestBodies: false,
      // the bounds on rate have their own suites; here every request must reach its handler
      overrides: {
        rate_limit: { requests_per_second: 0 },
        websocket: { max_frames_per_second: 1_000_000 },
        secrets: { encryption_key: Buffer.alloc(32, 7).toString('base64') },
      },
    });
    const tool = await api(t, 'POST', '/v1/tools/', {
      name: 'pay',
      safety: 'side_effecting',
      kind: 'http',
      parameters: { type: 'object', properties: { amount: { type: 'number', maximum: 100 } } },
      http: { url: 'http://127.0.0.1:9/pay', method: 'POST', timeout_ms: 1000 },
    });
    // two agents parked on a consent request: one is answered with a standing grant, one stays pending
    const parkedAgent = async (name: string) => {
      const agent = await api(t, 'POST', '/v1/agents/', {
        name,
        tools: ['pay'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'pay' }],
        memory_blocks: [{ label: 'human', value: 'Ada' }],
        model_script: [{ tool_calls: [{ name: 'pay', arguments: { amount: 5 } }] }],
      });
      const run = await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, {
        messages: [{ role: 'user', content: 'pay' }],
      });
      const requests = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body;
      return {
        agentId: agent.body.id as string,
        runId: run.body.run_id as string,
        requestId: requests.find((r: any) => r.agent_id === agent.body.id).id as string,
      };
    };
    const granted = await parkedAgent('fuzz-granted');
    const pending = await parkedAgent('fuzz-pending');
    await api(t, 'POST', `/v1/consent/requests/${granted.requestId}/decision`, {
      decision: 'approve_for_scope',
    });
    const grants = (await api(t, 'GET', `/v1/agents/${granted.agentId}/grants`)).body;
    const plain = await api(t, 'POST', '/v1/agents/', { name: 'fuzz-plain' });
    const conversation = await api(t, 'POST', '/v1/conversations', { agent_id: plain.body.id });
    const webhook = await api(t, 'POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      events: ['run.completed'],
    });
    const agents = [pending.agentId, granted.agentId, plain.body.id];
    // path parameters by the collection they follow in the route (`/v1/agents/:id` → agent ids)
    pools.agents = agents;
    pools.tools = [tool.body.id];
    pools.attach = pools.detach = pools.tools;
    pools.approval = ['pay', 'send_message'];
    pools.blocks = ['human'];
    pools.requests = [pending.requestId, granted.requestId];
    pools.grants = grants.map((g: any) => g.id);
    pools.runs = [pending.runId, granted.runId];
    pools.conversations = [conversation.body?.id].filter(Boolean);
    pools.webhooks = [webhook.body?.id].filter(Boolean);
    pools.secrets = ['MY_TOKEN', 'REFUNDS_API_TOKEN'];
  });
  afterAll(() => t.close());

  /** Hostile values: the edges of numbers and strings, and deep or wide structures. */
  const nasty = fc.constantFrom<unknown>(
    1e308,
    -1e308,
    1e-300,
    -1,
    0,
    2 ** 53 + 1,
    '',
    '\u0000',
    '*',
    '../../etc/passwd',
    '${OPENAI_API_KEY}',
    '^(a+)+$',
    'a'.repeat(20_000),
    Array.from({ length: 30_000 }, (_, i) => `t${i}`),
    { $ref: 'orders-schema' },
    { type: 'object', properties: { a: { pattern: '(?=x)' } } },
    [],
    {},
    null,
    true,
  );
  const value = fc.oneof({ weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, nasty);

  /** Bodies that pass the first checks, so the fuzz reaches the deeper ones. */
  const TEMPLATES: Record<string, Record<string, unknown>> = {
    '/v1/agents': {
      name: 'f',
      tools: ['pay'],
      tool_rules: [{ type: 'max_count_per_step', tool_name: '*', max_count_limit: 2 }],
      memory_blocks: [{ label: 'h', value: 'v', limit: 100 }],
      tags: ['a'],
      model_script: [{ content: 'ok' }],
      tool_executor: { tool_timeout_seconds: 10 },
      budgets: { max_batch_seconds: 10 },
    },
    '/v1/tools': {
      name: 'fuzzed',
      safety: 'read_only',
      kind: 'http',
      parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^a+$' } } },
      http: { url: 'http://127.0.0.1:9/x', method: 'POST', timeout_ms: 1000 },
    },
    messages: {
      messages: [{ role: 'user', content: 'hi' }],
      max_steps: 2,
      streaming: false,
    },
    approval: {
      messages: [
        {
          type: 'approval',
          approvals: [{ type: 'approval', tool_call_id: 'call_x', approve: true }],
          approval_request_id: 'message-x',
          approve: true,
        },
      ],
    },
    decision: {
      decision: 'approve_for_duration',
      seconds: 60,
      constraint: { type: 'object', properties: { amount: { maximum: 10 } } },
      reason: 'ok',
    },
    block: { value: 'x', limit: 100, description: 'd', read_only: false },
    '/v1/webhooks': { url: 'http://127.0.0.1:9/hook', events: ['run.completed'] },
    '/v1/mcp-servers': {
      server_name: 'fuzz',
      config: { mcp_server_type: 'streamable_http', server_url: 'http://127.0.0.1:9/mcp' },
    },
    '/v1/conversations': { agent_id: 'agent-x', summary: 's' },
    '/v1/secrets/:name': { value: 's3cret' },
  };
  const templateFor = (path: string): Record<string, unknown>[] => {
    if (/\/messages(\/stream|\/async)?$/.test(path))
      return [TEMPLATES.messages, TEMPLATES.approval];
    if (path.endsWith('/decision')) return [TEMPLATES.decision];
    if (path.includes('/core-memory/blocks/')) return [TEMPLATES.block];
    if (path === '/v1/agents/:id') return [TEMPLATES['/v1/agents']];
    return [TEMPLATES[path] ?? {}];
  };

  /** A body: arbitrary JSON, a template with fields replaced or added, or text that is not JSON. */
  const bodyFor = (path: string) =>
    fc.oneof(
      { weight: 4, arbitrary: mutated(templateFor(path)) },
      { weight: 2, arbitrary: value.map((v) => ({ json: v })) },
      { weight: 1, arbitrary: fc.string({ maxLength: 50 }).map((text) => ({ text })) },
      { weight: 1, arbitrary: fc.constant({ none: true }) },
    );
  const mutated = (templates: Record<string, unknown>[]) =>
    fc
      .tuple(
        fc.constantFrom(...templates),
        fc.dictionary(
          fc.constantFrom(...new Set([...templates.flatMap(Object.keys), 'x', '__proto__'])),
          value,
          { maxKeys: 3 },
        ),
      )
      .map(([tpl, over]) => ({ json: { ...tpl, ...over } }));

  /** A path parameter: a real id of this tenant (of the collection it follows), or junk. */
  const paramFor = (collection: string) =>
    fc.oneof(
      {
        weight: 3,
        arbitrary: fc.constantFrom(...(pools[collection]?.length ? pools[collection] : ['x'])),
      },
      {
        weight: 1,
        arbitrary: fc.constantFrom(
          'x',
          'agent-00000000-0000-4000-8000-000000000000',
          'a'.repeat(2000),
          '%00',
          '..',
          'ü💥',
        ),
      },
    );

  const writeRoutes = () => {
    const ex = t.app.getHttpAdapter().getInstance();
    const stack: any[] = (ex.router ?? ex._router).stack;
    const routes = stack
      .filter((l) => l.route)
      .flatMap((l) =>
        Object.keys(l.route.methods)
          .filter((m) => ['post', 'put', 'patch', 'delete'].includes(m))
          .map((m) => ({ method: m.toUpperCase(), path: l.route.path as string })),
      );
    // deletes last, so the other routes see the fixtures alive
    return routes.sort((a, b) => Number(a.method === 'DELETE') - Number(b.method === 'DELETE'));
  };

  async function send(method: string, path: string, body: any) {
    const res = await fetch(t.baseUrl + path, {
      method,
      headers: body.none ? {} : { 'content-type': 'application/json' },
      body: body.none ? undefined : 'text' in body ? body.text : JSON.stringify(body.json),
      signal: AbortSignal.timeout(20_000),
    });
    const text = await res.text();
    return { status: res.status, text };
  }

  const isErrorBody = (text: string) => {
    try {
      const b = JSON.parse(text);
      return (
        typeof b.code === 'string' &&
        typeof b.message === 'string' &&
        typeof b.details === 'object' &&
        b.details !== null
      );
    } catch {
      return false;
    }
  };

  it('every write route: no 5xx, every 4xx is {code, message, details}', async () => {
    const routes = writeRoutes();

    expect(routes.length).toBeGreaterThan(20);
    for (const route of routes) {
      const collections = [...route.path.matchAll(/([\w-]+)\/:\w+/g)].map((m) => m[1]);
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(...collections.map(paramFor)),
          bodyFor(route.path),
          async (values, body) => {
            let i = 0;
            const path = route.path.replace(/:(\w+)/g, () => encodeURIComponent(values[i++]));
            const res = await send(route.method, path, body);
            const where = `${route.method} ${path} ${JSON.stringify(body).slice(0, 300)} → ${res.status} ${res.text.slice(0, 300)}`;
            if (res.status >= 500 && !(res.status === 502 && isErrorBody(res.text)))
              throw new Error(`5xx: ${where}`);
            if (res.status >= 400 && !isErrorBody(res.text))
              throw new Error(`4xx without {code, message, details}: ${where}`);
          },
        ),
        { numRuns: RUNS_PER_ROUTE, seed: SEED, endOnFailure: true },
      );
    }
  }, 180_000);

  it('every WebSocket frame type: error frames carry a code and a message, never INTERNAL', async () => {
    const ws = await WsClient.connect(t.baseUrl);
    const pending = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body;
    const requestIds = [...pending.map((r: any) => r.id), 'consent-x', ''];
    const frame = fc.oneof(
      fc.record(
        {
          type: fc.constantFrom('subscribe', 'consent.decision', 'ping', 'nope', ''),
          agent_ids: fc.oneof(fc.constant(pools.agents), value),
          request_id: fc.oneof(fc.constantFrom(...requestIds), value),
          decision: fc.oneof(
            fc.constantFrom('approve_once', 'approve_for_duration', 'approve_for_scope', 'deny'),
            value,
          ),
          seconds: value,
          constraint: value,
          reason: value,
        },
        { requiredKeys: ['type'] },
      ),
      value,
      fc.string({ maxLength: 30 }),
      fc.uint8Array({ maxLength: 20 }).map((bytes) => Buffer.from(bytes)),
    );
    await fc.assert(
      fc.asyncProperty(frame, async (f) => {
        const from = ws.frames.length;
        if (Buffer.isBuffer(f)) ws.ws.send(f, { binary: true });
        else ws.send(typeof f === 'string' ? f : JSON.stringify(f));
        await ws.sync(); // the frame has been handled once the pong is back
        for (const got of ws.frames.slice(from).filter((x) => x.type === 'error')) {
          if (
            typeof got.code !== 'string' ||
            typeof got.message !== 'string' ||
            got.code === 'INTERNAL'
          )
            throw new Error(
              `bad error frame for ${JSON.stringify(f).slice(0, 300)}: ${JSON.stringify(got)}`,
            );
        }
      }),
      { numRuns: 150, seed: SEED, endOnFailure: true },
    );
    await ws.close();
  }, 120_000);
});
