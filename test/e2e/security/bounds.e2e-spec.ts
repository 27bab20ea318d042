/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { api, startToolServer } from '../consent-helpers';

/**
 * Issue 8 items 8 and 9: every number and count a tenant sends has a bound (config `limits.*`): durations
 * are finite whole seconds from 1 s to ten years (a dedupe window of 1e308 reached SQL as Infinity, a grant
 * of 1e-300 s was expired at birth); counts past a bound are 400 LIMIT_EXCEEDED naming the setting (30,000
 * tags were a 500, "too many SQL variables").
 */
describe('security: bounded numbers and counts', () => {
  let t: TestApp;
  const MAX_TOOLS = 10;
  // a default agent's four base tool rules (Letta's) and one of its own fit
  const MAX_RULES = 5;
  const MAX_PAGE = 5;

  let toolServer: Awaited<ReturnType<typeof startToolServer>>;

  beforeAll(async () => {
    toolServer = await startToolServer();
    t = await startApp({
      overrides: {
        limits: {
          max_tools_per_agent: MAX_TOOLS,
          max_rules_per_agent: MAX_RULES,
          max_page_size: MAX_PAGE,
        },
      },
    });
    for (let i = 0; i < MAX_TOOLS; i++)
      expect((await api(t, 'POST', '/v1/tools/', httpTool(`t${i}`))).status).toBe(200);
    const echo = { ...httpTool('echo'), http: { url: `${toolServer.url}/echo`, method: 'POST' } };
    expect((await api(t, 'POST', '/v1/tools/', echo)).status).toBe(200);
  });
  afterAll(async () => {
    await t.close();
    await toolServer.close();
  });

  const httpTool = (name: string) => ({
    name,
    safety: 'side_effecting',
    kind: 'http',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    http: { url: 'http://127.0.0.1:9/x', method: 'POST', timeout_ms: 1000 },
  });
  const expectLimit = (res: { status: number; body: any }, setting: string, path: string) => {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      code: 'LIMIT_EXCEEDED',
      message: expect.stringContaining(setting),
      details: { limits: [setting], problems: [expect.objectContaining({ path })] },
    });
  };
  const expectInvalidAt = (res: { status: number; body: any }, path: string) => {
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.problems.map((p: any) => p.path)).toContain(path);
  };

  describe('durations', () => {
    const rules: [string, any, string][] = [
      [
        'a dedupe window of 1e308 s',
        { type: 'dedupe', tool_name: 't0', window_seconds: 1e308, mode: 'reject' },
        'window_seconds',
      ],
      ['a cooldown of 1e308 s', { type: 'cooldown', tool_name: 't0', seconds: 1e308 }, 'seconds'],
      ['a cooldown of 1e-300 s', { type: 'cooldown', tool_name: 't0', seconds: 1e-300 }, 'seconds'],
      [
        'a cooldown past ten years',
        { type: 'cooldown', tool_name: 't0', seconds: 315_360_001 },
        'seconds',
      ],
    ];
    it.each(rules)('%s → 400 at the field', async (_n, rule, field) => {
      const res = await api(t, 'POST', '/v1/agents/', { tools: ['t0'], tool_rules: [rule] });
      expectInvalidAt(res, `tool_rules[0].${field}`);
    });

    it('a dedupe window of ten years works: the identical second call is refused, no SQL error', async () => {
      const created = await api(t, 'POST', '/v1/agents/', {
        tools: ['echo'],
        tool_rules: [
          { type: 'dedupe', tool_name: 'echo', window_seconds: 315_360_000, mode: 'reject' },
        ],
        model_script: [{ tool_calls: [{ name: 'echo', arguments: { q: 'refund A-1' } }] }],
      });
      expect(created.status).toBe(200);
      const send = () =>
        api(t, 'POST', `/v1/agents/${created.body.id}/messages`, {
          messages: [{ role: 'user', content: 'go' }],
        });
      const returns = async () =>
        (await send()).body.messages
          .filter((m: any) => m.message_type === 'tool_return_message')
          .map((m: any) => m.tool_return);
      expect(await returns()).toEqual(['{"ok":true}']);
      expect((await returns())[0]).toMatch(/^\[ToolDeduplicated\] echo already ran/);
      expect(toolServer.calls).toHaveLength(1);
    });

    it('a grant of 1e-300 s (expired at birth) or 1e308 s → 400 at seconds, the request stays pending', async () => {
      const created = await api(t, 'POST', '/v1/agents/', {
        tools: ['t1'],
        tool_rules: [{ type: 'requires_approval', tool_name: 't1' }],
        model_script: [{ tool_calls: [{ name: 't1', arguments: { q: 'x' } }] }],
      });
      const id = created.body.id;
      const parked = await api(t, 'POST', `/v1/agents/${id}/messages`, {
        messages: [{ role: 'user', content: 'go' }],
      });
      expect(parked.body.stop_reason).toMatchObject({ stop_reason: 'requires_approval' });
      const request = (await api(t, 'GET', '/v1/consent/requests?status=pending')).body.find(
        (r: any) => r.agent_id === id,
      );
      for (const seconds of [1e-300, 1e308, 0.5]) {
        const rest = await api(t, 'POST', `/v1/consent/requests/${request.id}/decision`, {
          decision: 'approve_for_duration',
          seconds,
        });
        expectInvalidAt(rest, 'seconds');
        const inBand = await api(t, 'POST', `/v1/agents/${id}/messages`, {
          messages: [
            {
              type: 'approval',
              approve: true,
              grant: { decision: 'approve_for_duration', seconds },
            },
          ],
        });
        expectInvalidAt(inBand, 'messages[0].grant.seconds');
      }
      expect((await api(t, 'GET', `/v1/agents/${id}`)).body.pending_approval).not.toBeNull();
      expect((await api(t, 'GET', `/v1/agents/${id}/grants`)).body).toEqual([]);
    });
  });

  describe('counts', () => {
    const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag-${i}`);

    it('30,000 tags on create → 400 LIMIT_EXCEEDED, never a 500', async () => {
      expectLimit(
        await api(t, 'POST', '/v1/agents/', { tags: tags(30_000) }),
        'limits.max_tags_per_agent',
        'tags',
      );
    });

    it('30,000 tags on update → 400 LIMIT_EXCEEDED; the agent keeps its tags', async () => {
      const created = await api(t, 'POST', '/v1/agents/', { tags: tags(100) });
      expect(created.status).toBe(200);
      expectLimit(
        await api(t, 'PATCH', `/v1/agents/${created.body.id}`, { tags: tags(30_000) }),
        'limits.max_tags_per_agent',
        'tags',
      );
      expect((await api(t, 'GET', `/v1/agents/${created.body.id}`)).body.tags).toHaveLength(100);
    });

    it('a list filter of more tags than limits.max_filter_values → 400 LIMIT_EXCEEDED', async () => {
      const query = tags(101)
        .map((x) => `tags=${x}`)
        .join('&');
      expectLimit(await api(t, 'GET', `/v1/agents/?${query}`), 'limits.max_filter_values', 'tags');
      expect(
        (
          await api(
            t,
            'GET',
            `/v1/agents/?${tags(100)
              .map((x) => `tags=${x}`)
              .join('&')}`,
          )
        ).status,
      ).toBe(200);
    });

    it('tools past limits.max_tools_per_agent: by name, by tool_ids, by attach', async () => {
      const names = Array.from({ length: MAX_TOOLS }, (_, i) => `t${i}`);
      expectLimit(
        await api(t, 'POST', '/v1/agents/', { tools: names }), // plus the base tools
        'limits.max_tools_per_agent',
        'tools',
      );
      // the list pages at limits.max_page_size: walked with its cursor
      const all: any[] = [];
      for (let page: any[] = [null]; page.length > 0; all.push(...page)) {
        const after = all.length ? `?after=${all[all.length - 1].id}` : '';
        page = (await api(t, 'GET', `/v1/tools/${after}`)).body;
        expect(page.length).toBeLessThanOrEqual(MAX_PAGE);
      }
      const ids = all.filter((x: any) => names.includes(x.name)).map((x: any) => x.id);
      expect(ids).toHaveLength(MAX_TOOLS);
      expectLimit(
        await api(t, 'POST', '/v1/agents/', {
          tool_ids: [...ids, ...ids],
          include_base_tools: false,
        }),
        'limits.max_tools_per_agent',
        'tool_ids',
      );
      const full = await api(t, 'POST', '/v1/agents/', {
        tools: names.slice(0, MAX_TOOLS - 4),
      });
      expect(full.status).toBe(200);
      expect(full.body.tools).toHaveLength(MAX_TOOLS);
      // a tool the agent does not have yet (the list is newest first: found by name, not by place)
      const notAttached = all.find((x: any) => x.name === names[MAX_TOOLS - 1]).id;
      const attach = await api(
        t,
        'PATCH',
        `/v1/agents/${full.body.id}/tools/attach/${notAttached}`,
      );
      expectLimit(attach, 'limits.max_tools_per_agent', 'tools');
      expect((await api(t, 'GET', `/v1/agents/${full.body.id}`)).body.tools).toHaveLength(
        MAX_TOOLS,
      );
    });

    it('rules past limits.max_rules_per_agent: on create and by the approval toggle', async () => {
      const rule = (i: number) => ({ type: 'requires_approval', tool_name: `t${i}` });
      const tools = ['t0', 't1', 't2', 't3', 't4', 't5'];
      const rules = (n: number) => Array.from({ length: n }, (_, i) => rule(i));
      expectLimit(
        await api(t, 'POST', '/v1/agents/', {
          tools,
          include_base_tools: false,
          tool_rules: rules(MAX_RULES + 1),
        }),
        'limits.max_rules_per_agent',
        'tool_rules',
      );
      // Letta's base tool rules count: two given and four base ones are past the bound
      const withBase = await api(t, 'POST', '/v1/agents/', { tools, tool_rules: rules(2) });
      expectLimit(withBase, 'limits.max_rules_per_agent', 'tool_rules');
      expect(withBase.body.details.problems[0].message).toContain('include_base_tool_rules: false');
      const full = await api(t, 'POST', '/v1/agents/', {
        tools,
        include_base_tools: false,
        tool_rules: rules(MAX_RULES),
      });
      expect(full.status).toBe(200);
      expectLimit(
        await api(t, 'PATCH', `/v1/agents/${full.body.id}/tools/approval/t5`, {
          requires_approval: true,
        }),
        'limits.max_rules_per_agent',
        'tool_rules',
      );
    });

    it('memory blocks past limits.max_memory_blocks_per_agent, a block limit past limits.max_block_chars', async () => {
      const blocks = Array.from({ length: 51 }, (_, i) => ({ label: `b${i}`, value: 'x' }));
      expectLimit(
        await api(t, 'POST', '/v1/agents/', { memory_blocks: blocks }),
        'limits.max_memory_blocks_per_agent',
        'memory_blocks',
      );
      expectInvalidAt(
        await api(t, 'POST', '/v1/agents/', {
          memory_blocks: [{ label: 'h', value: 'x', limit: 1e308 }],
        }),
        'memory_blocks[0].limit',
      );
      const created = await api(t, 'POST', '/v1/agents/', {
        memory_blocks: [{ label: 'h', value: 'x' }],
      });
      expectInvalidAt(
        await api(t, 'PATCH', `/v1/agents/${created.body.id}/core-memory/blocks/h`, {
          limit: 100_001,
        }),
        'limit',
      );
    });

    it("an identity's properties: 51, one 900 KB value (within the body limit), a 201-character key → 400 on create, upsert, update and PUT properties; nothing stored", async () => {
      const identity = (properties: unknown[]) => ({
        identifier_key: 'big-props',
        name: 'Big',
        identity_type: 'user',
        properties,
      });
      const many = Array.from({ length: 51 }, (_, i) => ({
        key: `k${i}`,
        value: i,
        type: 'number',
      }));
      const huge = [{ key: 'notes', value: 'x'.repeat(900_000), type: 'string' }];
      const longKey = [{ key: 'k'.repeat(201), value: 'v', type: 'string' }];
      const made = await api(t, 'POST', '/v1/identities/', identity([]));
      expect(made.status).toBe(200);
      const sends = (properties: unknown[]) => [
        api(t, 'POST', '/v1/identities/', { ...identity(properties), identifier_key: 'other' }),
        api(t, 'PUT', '/v1/identities/', identity(properties)),
        api(t, 'PATCH', `/v1/identities/${made.body.id}`, { properties }),
      ];
      for (const res of await Promise.all(sends(many)))
        expectLimit(res, 'identities.max_properties', 'properties');
      expectLimit(
        await api(t, 'PUT', `/v1/identities/${made.body.id}/properties`, many),
        'identities.max_properties',
        'properties',
      );
      for (const res of await Promise.all(sends(huge)))
        expectLimit(res, 'identities.max_properties_bytes', 'properties');
      expectLimit(
        await api(t, 'PUT', `/v1/identities/${made.body.id}/properties`, huge),
        'identities.max_properties_bytes',
        'properties',
      );
      for (const res of await Promise.all(sends(longKey)))
        expectInvalidAt(res, 'properties[0].key');
      const stored = await api(t, 'GET', `/v1/identities/${made.body.id}`);
      expect(stored.body.properties).toEqual([]);
      expect((await api(t, 'GET', '/v1/identities/?identifier_key=other')).body).toEqual([]);
    });
  });

  describe('pages', () => {
    // every list's `limit` is bounded by the one setting limits.max_page_size; past it, 400 naming it
    it.each([
      ['GET', '/v1/agents/'],
      ['GET', '/v1/runs/'],
      ['GET', '/v1/steps/'],
      ['GET', '/v1/messages/'],
      ['GET', '/v1/conversations/'],
      ['GET', '/v1/tags/'],
      ['GET', '/v1/blocks/'],
      ['GET', '/v1/identities/'],
      ['GET', '/v1/archives/'],
      ['GET', '/v1/grants'],
      ['GET', '/v1/consent/requests'],
      ['GET', '/v1/consent/audit'],
      ['POST', '/v1/tools/search'],
      ['POST', '/v1/messages/search'],
    ])('%s %s with limit past the bound → 400 at limit', async (method, path) => {
      const res =
        method === 'GET'
          ? await api(t, 'GET', `${path}?limit=${MAX_PAGE + 1}`)
          : await api(t, 'POST', path, { query: 'x', limit: MAX_PAGE + 1 });
      expectInvalidAt(res, 'limit');
      expect(JSON.stringify(res.body)).toContain('limits.max_page_size');
      const ok =
        method === 'GET'
          ? await api(t, 'GET', `${path}?limit=${MAX_PAGE}`)
          : await api(t, 'POST', path, { query: 'x', limit: MAX_PAGE });
      expect(ok.status).toBe(200);
    });
  });
});

describe('security: stored counts per tenant and agent', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startApp({
      overrides: { quotas: { agents: 2 }, limits: { max_conversations_per_agent: 2 } },
    });
  });
  afterAll(() => t.close());

  it('agents past quotas.agents → 409 QUOTA_EXCEEDED; a deletion makes room', async () => {
    const made = [];
    for (let i = 0; i < 2; i++) made.push(await api(t, 'POST', '/v1/agents/', { name: `a${i}` }));
    expect(made.map((r) => r.status)).toEqual([200, 200]);
    const third = await api(t, 'POST', '/v1/agents/', { name: 'a2' });
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({
      code: 'QUOTA_EXCEEDED',
      details: { quota: 'agents', limit: 2, used: 3, setting: 'quotas.agents' },
    });
    expect(third.body.message).toContain('quotas.agents');
    // deleting one makes room again
    expect((await api(t, 'DELETE', `/v1/agents/${made[0].body.id}`)).status).toBe(200);
    expect((await api(t, 'POST', '/v1/agents/', { name: 'a3' })).status).toBe(200);
  });

  it('conversations past limits.max_conversations_per_agent → 409 CONVERSATION_LIMIT, also by fork', async () => {
    const agents = (await api(t, 'GET', '/v1/agents/')).body;
    const agentId = agents[0].id;
    const made = [];
    for (let i = 0; i < 2; i++)
      made.push(await api(t, 'POST', `/v1/conversations/?agent_id=${agentId}`, {}));
    expect(made.map((r) => r.status)).toEqual([200, 200]);
    const third = await api(t, 'POST', `/v1/conversations/?agent_id=${agentId}`, {});
    expect(third.status).toBe(409);
    expect(third.body).toMatchObject({ code: 'CONVERSATION_LIMIT', details: { max: 2 } });
    const fork = await api(t, 'POST', `/v1/conversations/${made[0].body.id}/fork`);
    expect(fork.status).toBe(409);
    expect(fork.body.code).toBe('CONVERSATION_LIMIT');
  });
});
