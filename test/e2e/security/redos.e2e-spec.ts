/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * Issue 8 item 4: a JSON-Schema `pattern` is evaluated by RE2 (linear time), so a backtracking pattern in
 * a tool's parameters or a grant's constraint, fed a text the model chose, cannot block the event loop.
 * The backtracking engine took 8.8 s (`^(a+)+$`, 27 a's and "!") and 73 s (`^(a|aa)+$`, 42 a's); each
 * evaluation costs well under 50 ms now (test/unit/core/schemas); here each whole request, model step and
 * writes included, is answered within a bound the old code missed by an order of magnitude.
 */
describe('security: patterns cannot backtrack (ReDoS)', () => {
  let t: TestApp;
  const EVIL_1 = 'a'.repeat(27) + '!';
  const EVIL_2 = 'a'.repeat(42) + '!';

  beforeAll(async () => {
    t = await startApp();
  });
  afterAll(() => t.close());

  const tool = (name: string, pattern: string) =>
    api(t, 'POST', '/v1/tools/', {
      name,
      description: 'takes a code',
      safety: 'side_effecting',
      kind: 'http',
      parameters: { type: 'object', properties: { code: { type: 'string', pattern } } },
      http: { url: 'http://127.0.0.1:9/never', method: 'POST', timeout_ms: 1000 },
    });

  const agentCalling = async (toolName: string, code: string, rules: any[] = []) => {
    const res = await api(t, 'POST', '/v1/agents/', {
      tools: [toolName],
      tool_rules: rules,
      model_script: [{ tool_calls: [{ name: toolName, arguments: { code } }] }],
    });
    expect(res.status).toBe(200);
    return res.body.id as string;
  };

  // a backtracking engine would not answer these before the test's timeout: the answer is the check
  const send = (agentId: string) =>
    api(t, 'POST', `/v1/agents/${agentId}/messages`, {
      messages: [{ role: 'user', content: 'go' }],
    });

  it('tool parameters ^(a+)+$, the model sends 27 a\'s and "!": refused as invalid arguments at once', async () => {
    expect((await tool('check_code', '^(a+)+$')).status).toBe(200);
    const agentId = await agentCalling('check_code', EVIL_1);
    const res = await send(agentId);
    expect(res.status).toBe(200);
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret.tool_return).toMatch(/InvalidArguments.*must match pattern/);
  });

  it('grant constraint ^(a|aa)+$, the model sends 42 a\'s and "!": the grant does not cover it, at once', async () => {
    expect((await tool('pay_code', '^[a!]+$')).status).toBe(200);
    const agentId = await agentCalling('pay_code', EVIL_2, [
      { type: 'requires_approval', tool_name: 'pay_code' },
    ]);
    const parked = await send(agentId);
    expect(parked.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
    const pending = await api(t, 'GET', '/v1/consent/requests?status=pending');
    const requestId = pending.body.find((r: any) => r.agent_id === agentId).id;
    const decided = await api(t, 'POST', `/v1/consent/requests/${requestId}/decision`, {
      decision: 'approve_for_duration',
      seconds: 600,
      constraint: { type: 'object', properties: { code: { pattern: '^(a|aa)+$' } } },
    });
    expect(decided.status).toBeLessThan(300);
    await waitUntilIdle(agentId);
    // the same call again: the grant's constraint is evaluated against the evil text
    const again = await send(agentId);
    expect(again.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
  });

  it('a pattern RE2 cannot run (lookahead, backreference) is refused at declaration, naming its path', async () => {
    const res = await tool('lookahead', '^(?=a)a+$');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'VALIDATION_FAILED' });
    expect(res.body.details.problems[0].path).toBe('parameters.properties.code.pattern');
    const backref = await api(t, 'POST', '/v1/tools/', {
      name: 'backref',
      safety: 'read_only',
      kind: 'http',
      parameters: { type: 'object', patternProperties: { '^(a)\\1$': {} } },
      http: { url: 'http://127.0.0.1:9/never' },
    });
    expect(backref.status).toBe(400);
    expect(backref.body.details.problems[0].path).toBe(
      'parameters.patternProperties["^(a)\\\\1$"]',
    );
  });

  it('uniqueItems over objects without a small maxItems (a quadratic check) is refused at declaration', async () => {
    const declare = (list: Record<string, unknown>) =>
      api(t, 'POST', '/v1/tools/', {
        name: 'unique_orders',
        safety: 'read_only',
        kind: 'http',
        parameters: { type: 'object', properties: { list } },
        http: { url: 'http://127.0.0.1:9/never' },
      });
    const res = await declare({ type: 'array', uniqueItems: true, items: { type: 'object' } });
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].path).toBe('parameters.properties.list.uniqueItems');
    const bounded = await declare({
      type: 'array',
      uniqueItems: true,
      items: { type: 'object' },
      maxItems: 100,
    });
    expect(bounded.status).toBe(200);
  });

  /** The parked run's continuation (the approved call) has run and ended: the agent takes the next message. */
  async function waitUntilIdle(agentId: string) {
    for (;;) {
      const runs = (await api(t, 'GET', `/v1/runs/?agent_id=${agentId}`)).body;
      const ended = runs.filter((r: any) =>
        ['completed', 'failed', 'cancelled'].includes(r.status),
      );
      if (runs.length >= 2 && ended.length === runs.length) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
});
