import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { ToolsService } from '../../../src/tools/tools.service';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * Issue 8 items 6 and 7: schemas are compiled without a shared registry. A tenant's `$id` is invisible to
 * every other schema (no "already exists", no `$ref` across tenants), and nothing is kept per schema beyond
 * a bounded cache, so creating and deleting thousands of schema'd tools leaves memory flat.
 */
describe('security: one schema compiler per owner', () => {
  let t: TestApp;
  const A = 'key-tenant-a';
  const B = 'key-tenant-b';

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: A, tenant: 'tenant-a' },
            { key: B, tenant: 'tenant-b' },
          ],
        },
      },
    });
  });
  afterAll(() => t.close());

  const toolWith = (name: string, parameters: Record<string, unknown>) => ({
    name,
    description: 'an order tool',
    safety: 'side_effecting',
    kind: 'http',
    parameters,
    http: { url: 'http://127.0.0.1:9/orders', method: 'POST', timeout_ms: 1000 },
  });
  const ordersSchema = {
    $id: 'orders-schema',
    type: 'object',
    properties: { order_id: { type: 'string', pattern: '^A-[0-9]+$' } },
  };

  it('tenant B declares the $id tenant A declared: accepted (ids are not shared)', async () => {
    expect((await api(t, 'POST', '/v1/tools/', toolWith('orders_a', ordersSchema), A)).status).toBe(
      200,
    );
    const b = await api(t, 'POST', '/v1/tools/', toolWith('orders_b', ordersSchema), B);
    expect(b.status).toBe(200);
  });

  it("tenant B's $ref to tenant A's $id does not resolve: 400 naming parameters", async () => {
    const res = await api(
      t,
      'POST',
      '/v1/tools/',
      toolWith('orders_ref', { type: 'object', properties: { o: { $ref: 'orders-schema' } } }),
      B,
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.problems[0]).toMatchObject({
      path: 'parameters',
      message: expect.stringContaining("can't resolve reference orders-schema"),
    });
  });

  it("a grant constraint's $ref does not reach a tool schema or another grant either", async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        tools: ['orders_b'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'orders_b' }],
        model_script: [{ tool_calls: [{ name: 'orders_b', arguments: { order_id: 'A-1' } }] }],
      },
      B,
    );
    const sent = await api(
      t,
      'POST',
      `/v1/agents/${agent.body.id}/messages`,
      { messages: [{ role: 'user', content: 'go' }] },
      B,
    );
    expect(sent.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
    const [request] = (await api(t, 'GET', '/v1/consent/requests?status=pending', undefined, B))
      .body;
    const res = await api(
      t,
      'POST',
      `/v1/consent/requests/${request.id}/decision`,
      { decision: 'approve_for_scope', constraint: { $ref: 'orders-schema' } },
      B,
    );
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].path).toBe('constraint');
    // a constraint with its own $id is fine, and does not collide with the tools' one
    const ok = await api(
      t,
      'POST',
      `/v1/consent/requests/${request.id}/decision`,
      { decision: 'approve_for_scope', constraint: { ...ordersSchema } },
      B,
    );
    expect(ok.status).toBeLessThan(300);
  });

  // The compiler is what is measured; on PostgreSQL the 12,000 round trips alone take a minute.
  const onSqlite = !process.env.TEST_DATABASE_URL;
  if (!onSqlite) console.log('schemas e2e: the 6,000-tool memory test runs on SQLite only');
  (onSqlite ? it : it.skip)(
    'create and delete 6,000 tools with distinct schemas: the heap grows by less than 10 MB, RSS by less than 200 MB',
    async () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      // through the service the API calls (the HTTP round trips would only make this slow)
      const tools = t.app.get(ToolsService);
      const cycle = async (i: number) => {
        const created = await tools.create(
          'tenant-a',
          toolWith(`leak_${i}`, {
            $id: `schema-${i}`,
            type: 'object',
            properties: {
              [`field_${i}`]: { type: 'string', pattern: `^x${i}(a|b)*$`, maxLength: 100 + i },
              nested: { type: 'array', items: { type: 'integer', minimum: i } },
            },
            required: [`field_${i}`],
          }),
        );
        await tools.delete('tenant-a', created.id);
      };
      const run = async (from: number, to: number) => {
        for (let i = from; i < to; i++) await cycle(i);
      };
      await run(0, 2000); // warm up: JIT, pools, caches and the heap at their working size
      gc();
      const before = process.memoryUsage();
      await run(2000, 8000);
      gc();
      const after = process.memoryUsage();
      // what the process keeps (the leak kept every compiled schema: 6,000 tools took RSS 110 → 848 MB)
      expect((after.heapUsed - before.heapUsed) / 2 ** 20).toBeLessThan(10);
      // RSS also holds SQLite's page cache (32 MiB) and the allocator's free lists: 50–110 MB of growth
      // without any leak on a loaded machine, so its bound only catches a native leak of that size
      expect((after.rss - before.rss) / 2 ** 20).toBeLessThan(200);
    },
    120_000,
  );
});
