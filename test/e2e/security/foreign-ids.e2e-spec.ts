/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startHttpMcpServer } from '../../support/mcp-test-server';
import {
  api,
  LoopEnv,
  say,
  startLoopEnv,
  TENANT_A,
  TENANT_B,
  TWO_TENANTS,
} from '../../support/processing-fixtures';

type Ids = Record<string, string>;

/**
 * Tenant B walks every route of the API description with tenant A's ids: in every path parameter that
 * names an object, A's id answers exactly what an id that exists nowhere answers (status and body, the id
 * itself aside), so B can neither reach A's objects nor learn that they exist. A route added later is
 * walked too; a parameter this table does not know fails the test until it is added.
 */
describe('security: another tenant’s ids in every route', () => {
  let env: LoopEnv;
  let mcp: Awaited<ReturnType<typeof startHttpMcpServer>>;
  let a: Ids;
  let b: Ids;

  /** Every kind of object a path names, made by one tenant. */
  async function seed(who: Record<string, string>): Promise<Ids> {
    const { t } = env;
    const call = async (method: string, path: string, body?: unknown) => {
      const r = await api(t, method, path, body, who);
      if (r.status >= 300) throw new Error(`${method} ${path}: ${JSON.stringify(r.body)}`);
      return r.body;
    };
    const tool = await call('POST', '/v1/tools/', {
      name: 'pay',
      parameters: { type: 'object', properties: { amount: { type: 'number' } } },
      safety: 'read_only',
      kind: 'http',
      http: { url: `${env.tools.baseUrl}/tool/pay`, method: 'POST' },
    });
    const block = await call('POST', '/v1/blocks', { label: 'shared', value: 'private' });
    const identity = await call('POST', '/v1/identities', {
      identifier_key: 'customer-1',
      name: 'Customer',
      identity_type: 'user',
    });
    // the scripted model echoes; this agent has everything attached
    const agent = await call('POST', '/v1/agents/', {
      name: 'chat',
      tools: ['pay'],
      block_ids: [block.id],
      identity_ids: [identity.id],
      memory_blocks: [{ label: 'persona', value: 'private persona' }],
    });
    const archive = await call('POST', '/v1/archives', { name: 'kb' });
    const passage = await call('POST', `/v1/archives/${archive.id}/passages`, { text: 'fact' });
    await call('PATCH', `/v1/agents/${agent.id}/archives/attach/${archive.id}`);
    const [memory] = await call('POST', `/v1/agents/${agent.id}/archival-memory`, { text: 'x' });
    const conversation = await call('POST', `/v1/conversations/?agent_id=${agent.id}`, {});
    await call(
      'POST',
      `/v1/conversations/${conversation.id}/messages`,
      say('hi', { streaming: false }),
    );
    const [message] = await call('GET', `/v1/conversations/${conversation.id}/messages`);
    const [run] = await call('GET', `/v1/runs/?agent_id=${agent.id}`);
    const [step] = await call('GET', `/v1/steps/?agent_id=${agent.id}`);
    // a decided request (its grant) and a pending one, of an agent that pays
    const payer = await call('POST', '/v1/agents/', {
      name: 'payer',
      tools: ['pay'],
      tool_rules: [{ type: 'requires_consent', tool_name: 'pay' }],
      model_script: [
        { tool_calls: [{ name: 'pay', arguments: { amount: 1 } }] },
        { content: 'ok' },
      ],
    });
    await call('POST', `/v1/agents/${payer.id}/messages`, say('pay'));
    const [decided] = await call('GET', `/v1/consent/requests?agent_id=${payer.id}`);
    await call('POST', `/v1/consent/requests/${decided.id}/decision`, {
      decision: 'approve_for_duration',
      seconds: 3600,
      constraint: { type: 'object', properties: { amount: { type: 'number', maximum: 0 } } },
    });
    const [grant] = await call('GET', `/v1/agents/${payer.id}/grants`);
    await call('POST', `/v1/agents/${payer.id}/messages`, say('pay again'));
    const [consent] = await call('GET', `/v1/consent/requests?agent_id=${payer.id}`);
    const webhook = await call('POST', '/v1/webhooks', {
      url: `${env.tools.baseUrl}/hook`,
      events: ['run.completed'],
    });
    const server = await call('POST', '/v1/mcp-servers/', {
      server_name: 'remote',
      config: { mcp_server_type: 'streamable_http', server_url: mcp.url },
    });
    const [mcpTool] = await call('GET', `/v1/mcp-servers/${server.id}/tools`);
    return {
      agent: agent.id,
      archive: archive.id,
      block: block.id,
      consent: consent.id,
      conversation: conversation.id,
      grant: grant.id,
      identity: identity.id,
      mcp: server.id,
      mcpTool: mcpTool.id,
      memory: memory.id,
      message: message.id,
      passage: passage.id,
      run: run.id,
      step: step.id,
      tool: tool.id,
      webhook: webhook.id,
    };
  }

  beforeAll(async () => {
    mcp = await startHttpMcpServer();
    env = await startLoopEnv([], {
      overrides: { ...TWO_TENANTS, rate_limit: { requests_per_second: 0 } },
    });
    a = await seed(TENANT_A);
    b = await seed(TENANT_B);
  });
  afterAll(async () => {
    await env.close();
    await mcp.close();
  });

  /** The kind of object a path parameter names (by the parameter, else the segment before it). */
  const kindOf = (path: string, param: string): string | null => {
    const before =
      path
        .slice(0, path.indexOf(`{${param}}`))
        .split('/')
        .at(-2) ?? '';
    const byParam: Record<string, string> = {
      agentId: 'agent',
      archive_id: 'archive',
      block_id: 'block',
      identityId: 'identity',
      memory_id: 'memory',
      messageId: 'message',
      passage_id: 'passage',
      runId: 'run',
      stepId: 'step',
      toolId: path.startsWith('/v1/mcp-servers/') ? 'mcpTool' : 'tool',
    };
    const bySegment: Record<string, string> = {
      agents: 'agent',
      archives: 'archive',
      blocks: 'block',
      conversations: 'conversation',
      grants: 'grant',
      identities: 'identity',
      'mcp-servers': 'mcp',
      requests: 'consent',
      tools: 'tool',
      webhooks: 'webhook',
    };
    return byParam[param] ?? (param === 'id' ? (bySegment[before] ?? null) : null);
  };
  /** Parameters that are names, not ids: B's own values. */
  const NAMES: Record<string, string> = { label: 'persona', name: 'TOKEN', toolName: 'pay' };
  const unknownLike = (id: string) =>
    id.replace(/-[0-9a-f-]{36}$/, '-0198f000-0000-7000-8000-000000000000');

  it('A’s id in any path parameter answers as an unknown id does; A’s objects are untouched', async () => {
    const { t } = env;
    const doc = (await api(t, 'GET', '/openapi.json')).body;
    const differ: unknown[] = [];
    let walked = 0;
    for (const [path, ops] of Object.entries<Record<string, unknown>>(doc.paths)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      // the decision URL's token is its credential, no tenant's
      if (params.length === 0 || path.includes('{token}')) continue;
      for (const method of Object.keys(ops)) {
        for (const param of params.filter((p) => !(p in NAMES))) {
          const kind = kindOf(path, param);
          expect({ path, param, kind }).toEqual({ path, param, kind: expect.any(String) });
          const fill = (own: Ids, tested: string) =>
            path.replace(/\{(\w+)\}/g, (_m, p: string) =>
              p === param ? tested : (NAMES[p] ?? own[kindOf(path, p)!]),
            );
          const foreign = a[kind!];
          const unknown = unknownLike(foreign);
          const body = ['post', 'patch', 'put'].includes(method) ? {} : undefined;
          const asUnknown = await api(t, method.toUpperCase(), fill(b, unknown), body, TENANT_B);
          const asForeign = await api(t, method.toUpperCase(), fill(b, foreign), body, TENANT_B);
          const shown = (r: { status: number; body: unknown }, id: string) => ({
            status: r.status,
            body: JSON.stringify(r.body).split(id).join('<id>'),
          });
          walked++;
          const seen = shown(asForeign, foreign);
          if (JSON.stringify(seen) !== JSON.stringify(shown(asUnknown, unknown)))
            differ.push({
              route: `${method.toUpperCase()} ${path}`,
              param,
              foreign: seen,
              unknown: shown(asUnknown, unknown),
            });
        }
      }
    }
    expect(differ).toEqual([]);
    expect(walked).toBeGreaterThan(90);
    // nothing of A's was changed or deleted on the way
    for (const path of [
      `/v1/agents/${a.agent}`,
      `/v1/blocks/${a.block}`,
      `/v1/identities/${a.identity}`,
      `/v1/tools/${a.tool}`,
      `/v1/archives/${a.archive}`,
      `/v1/conversations/${a.conversation}`,
      `/v1/consent/requests/${a.consent}`,
      `/v1/webhooks/${a.webhook}`,
      `/v1/mcp-servers/${a.mcp}`,
      `/v1/runs/${a.run}`,
      `/v1/steps/${a.step}`,
      `/v1/messages/${a.message}`,
    ])
      expect({ path, status: (await api(t, 'GET', path, undefined, TENANT_A)).status }).toEqual({
        path,
        status: 200,
      });
    const request = await api(t, 'GET', `/v1/consent/requests/${a.consent}`, undefined, TENANT_A);
    expect(request.body.status).toBe('pending');
    const grants = (await api(t, 'GET', '/v1/grants', undefined, TENANT_A)).body;
    expect(grants.map((g: any) => [g.id, g.revoked_at])).toEqual([[a.grant, null]]);
  });
});
