import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA (exhaustion): a 1.4 KB schema whose $defs chain `dI = {anyOf: [{$ref: d(I+1)}, {$ref: d(I+1)}]}`
 * costs 2^21 subschema evaluations per value: validating `{x: 1}` froze the server 13 s and kept 2 GB of
 * errors. Every schema a tenant declares (tool parameters, grant constraints; MCP input schemas go through
 * the same compiler) is refused past `limits.max_schema_expansion`: 400 LIMIT_EXCEEDED naming it.
 */
describe('security: exponential JSON Schema fan-out is refused at declaration', () => {
  let t: TestApp;
  const A = 'key-tenant-a';

  beforeAll(async () => {
    t = await startApp({ overrides: { auth: { api_keys: [{ key: A, tenant: 'tenant-a' }] } } });
  });
  afterAll(() => t.close());

  /** The QA's schema: d0 … d(n-1) each anyOf two $refs to the next, dn a string. */
  const fanOut = (n: number) => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < n; i++)
      defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    defs[`d${n}`] = { type: 'string' };
    return { type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs };
  };
  const tool = (name: string, parameters: Record<string, unknown>) => ({
    name,
    description: 'd',
    safety: 'read_only',
    kind: 'http',
    parameters,
    http: { method: 'POST', url: 'http://127.0.0.1:9/x' },
  });

  it('POST /v1/tools/ with the 1.4 KB, 2^21 schema: 400 LIMIT_EXCEEDED at parameters, at once', async () => {
    expect(JSON.stringify(fanOut(21)).length).toBeLessThan(1600);
    const res = await api(t, 'POST', '/v1/tools/', tool('fan_out', fanOut(21)), A);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('LIMIT_EXCEEDED');
    expect(res.body.details.problems[0]).toMatchObject({
      path: 'parameters',
      limit: 'limits.max_schema_expansion',
    });
  });

  it('the same chain 8 levels deep (256 evaluations) is an ordinary schema: accepted', async () => {
    const res = await api(t, 'POST', '/v1/tools/', tool('fan_out_small', fanOut(8)), A);
    expect(res.status).toBe(200);
  });

  it('the same schema as a grant constraint (approve_for_duration): 400 LIMIT_EXCEEDED at constraint', async () => {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        tools: ['fan_out_small'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'fan_out_small' }],
        model_script: [{ tool_calls: [{ name: 'fan_out_small', arguments: { x: 'a' } }] }],
      },
      A,
    );
    const sent = await api(
      t,
      'POST',
      `/v1/agents/${agent.body.id}/messages`,
      { messages: [{ role: 'user', content: 'go' }] },
      A,
    );
    expect(sent.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
    const [request] = (
      await api(
        t,
        'GET',
        `/v1/consent/requests?status=pending&agent_id=${agent.body.id}`,
        undefined,
        A,
      )
    ).body;
    const res = await api(
      t,
      'POST',
      `/v1/consent/requests/${request.id}/decision`,
      { decision: 'approve_for_duration', seconds: 600, constraint: fanOut(21) },
      A,
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('LIMIT_EXCEEDED');
    expect(res.body.details.problems[0]).toMatchObject({
      path: 'constraint',
      limit: 'limits.max_schema_expansion',
    });
  });
});
