/* eslint-disable @typescript-eslint/no-explicit-any */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import {
  api,
  createAgent,
  LoopEnv,
  say,
  startLoopEnv,
  TENANT_A,
  TENANT_B,
  ToolServer,
  TWO_TENANTS,
} from '../support/processing-fixtures';

const A = TENANT_A;
const B = TENANT_B;

/** Letta's agent file (.af): export, import into the caller's tenant, the same behaviour after. */
describe('agent files (.af): export and import', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let tools: ToolServer;

  beforeAll(async () => {
    env = await startLoopEnv([], {
      overrides: {
        ...TWO_TENANTS,
        agent_files: { max_bytes: 200_000, max_messages: 50, max_agents: 3 },
      },
    });
    ({ t, fake, tools } = env);
    for (const h of [A, B])
      expect(
        (await api(t, 'PUT', '/v1/secrets/LOOKUP_KEY', { value: `key-of-${h.authorization}` }, h))
          .status,
      ).toBe(200);
    const tool = await api(
      t,
      'POST',
      '/v1/tools/',
      {
        name: 'lookup',
        description: 'looks things up',
        parameters: { type: 'object', properties: { q: { type: 'string' } } },
        safety: 'read_only',
        kind: 'http',
        http: {
          url: `${tools.baseUrl}/tool/lookup`,
          method: 'POST',
          headers: { 'X-Key': '${LOOKUP_KEY}', 'X-Static': 'literal-secret-value' },
        },
      },
      A,
    );
    expect(tool.status).toBe(200);
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const newAgent = (over: Record<string, unknown> = {}) =>
    createAgent(
      t,
      fake,
      {
        system: 'You are the export test agent.',
        tools: ['lookup', 'send_message'],
        include_base_tools: false,
        tool_rules: [
          { type: 'dedupe', tool_name: 'lookup', window_seconds: 60, mode: 'reject' },
          { type: 'max_count_per_step', tool_name: 'lookup', max_count_limit: 3 },
        ],
        memory_blocks: [{ label: 'human', value: 'Ada', limit: 100 }],
        tags: ['af'],
        tool_executor: { dedupe_window_seconds: 0 },
        timezone: 'Europe/Berlin',
        ...over,
      },
      A,
    );
  const exportOf = async (id: string, query = '', h = A) =>
    api(t, 'GET', `/v1/agents/${id}/export${query}`, undefined, h);
  const importFile = async (file: unknown, fields: Record<string, string> = {}, h = B) => {
    const form = new FormData();
    const text = typeof file === 'string' ? file : JSON.stringify(file);
    form.append('file', new Blob([text], { type: 'application/json' }), 'agent.af');
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    const res = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: h,
      body: form,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const history = async (id: string, h: Record<string, string>) =>
    (await api(t, 'GET', `/v1/agents/${id}/messages?order=asc&limit=100`, undefined, h)).body.map(
      (m: any) => [m.message_type, m.content ?? m.tool_call?.name ?? m.tool_return],
    );

  it('round trip: export → import into another tenant → same agent, history and next model request', async () => {
    const id = await newAgent();
    fake.push(
      { tool_calls: [{ name: 'lookup', arguments: { q: 'ada', request_heartbeat: true } }] },
      { tool_calls: [{ name: 'send_message', arguments: { message: 'Ada is found' } }] },
    );
    expect((await api(t, 'POST', `/v1/agents/${id}/messages`, say('find ada'), A)).status).toBe(
      200,
    );

    const exported = await exportOf(id);
    expect(exported.status).toBe(200);
    const af = exported.body;
    expect(af).toMatchObject({ groups: [], files: [], sources: [], mcp_servers: [] });
    const [agent] = af.agents;
    expect(agent).toMatchObject({
      id: 'agent-0',
      system: 'You are the export test agent.',
      tool_ids: ['tool-0', 'tool-1'],
      block_ids: ['block-0'],
      tags: ['af'],
      tool_executor: { dedupe_window_seconds: 0 },
      timezone: 'Europe/Berlin',
    });
    // Letta's base rule for send_message follows the agent's own; the import adds none again (below)
    expect(agent.tool_rules.map((r: any) => r.type)).toEqual([
      'dedupe',
      'max_count_per_step',
      'exit_loop',
    ]);
    expect(af.blocks).toEqual([
      expect.objectContaining({ label: 'human', value: 'Ada', limit: 100 }),
    ]);
    const lookup = af.tools.find((x: any) => x.name === 'lookup');
    expect(lookup.http.headers).toEqual({ 'X-Key': '${LOOKUP_KEY}' });
    expect(af.metadata.dropped_headers).toBe('lookup.X-Static');
    expect(JSON.stringify(af)).not.toContain('literal-secret-value');
    expect(JSON.stringify(af)).not.toContain('key-of-');
    expect(agent.messages.map((m: any) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'user',
      'assistant',
      'tool',
    ]);
    expect(agent.messages[0].content[0].text).toContain('### human\nAda');
    expect(agent.in_context_message_ids).toEqual(agent.messages.map((m: any) => m.id));

    const imported = await importFile(af);
    expect(imported.status).toBe(200);
    const [copyId] = imported.body.agent_ids;
    expect(copyId).not.toBe(id);
    const copy = (await api(t, 'GET', `/v1/agents/${copyId}`, undefined, B)).body;
    const orig = (await api(t, 'GET', `/v1/agents/${id}`, undefined, A)).body;
    for (const k of ['name', 'system', 'tool_rules', 'tags', 'tool_executor', 'timezone'])
      expect(copy[k]).toEqual(orig[k]);
    expect(copy.tools.map((x: any) => x.name).sort()).toEqual(['lookup', 'send_message']);
    expect(copy.memory.blocks).toEqual([expect.objectContaining({ label: 'human', value: 'Ada' })]);
    // tenant B got its own http tool, its header still a reference to B's own secret
    const bTools = (await api(t, 'GET', '/v1/tools/?name=lookup', undefined, B)).body;
    expect(bTools[0].http.headers).toEqual({ 'X-Key': '${LOOKUP_KEY}' });
    expect(await history(copyId, B)).toEqual(await history(id, A));

    // the same next model request for both
    fake.push({ content: 'again' }, { content: 'again' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('and now?'), A);
    await api(t, 'POST', `/v1/agents/${copyId}/messages`, say('and now?'), B);
    const [a, b] = fake.requests.slice(-2);
    expect(b.messages).toEqual(a.messages);
    expect(b.toolNames).toEqual(a.toolNames);
  });

  it("import adds Letta's base tool rules only when the file asks for them (Letta's files say false)", async () => {
    const id = await newAgent({ tool_rules: [], include_base_tool_rules: false });
    const af = (await exportOf(id)).body;
    expect(af.agents[0]).toMatchObject({ tool_rules: [], include_base_tool_rules: false });
    const rulesOfImport = async (agent: Record<string, unknown>) => {
      const res = await importFile({ ...af, agents: [{ ...af.agents[0], ...agent }] });
      expect(res.status).toBe(200);
      return (await api(t, 'GET', `/v1/agents/${res.body.agent_ids[0]}`, undefined, B)).body
        .tool_rules;
    };
    expect(await rulesOfImport({})).toEqual([]);
    expect(await rulesOfImport({ include_base_tool_rules: undefined })).toEqual([]);
    expect(await rulesOfImport({ include_base_tool_rules: true })).toEqual([
      { type: 'exit_loop', tool_name: 'send_message' },
    ]);
  });

  it('the in-context window travels: after a reset only the system prompt is in context', async () => {
    const id = await newAgent();
    fake.push({ content: 'first answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('old question'), A);
    await api(t, 'PATCH', `/v1/agents/${id}/reset-messages`, {}, A);
    const af = (await exportOf(id)).body;
    expect(af.agents[0].in_context_message_ids).toEqual(['message-0']);
    const copyId = (await importFile(af, { name: 'renamed' })).body.agent_ids[0];
    expect((await api(t, 'GET', `/v1/agents/${copyId}`, undefined, B)).body.name).toBe('renamed');
    fake.push({ content: 'fresh' });
    await api(t, 'POST', `/v1/agents/${copyId}/messages`, say('new question'), B);
    const seen = JSON.stringify(fake.requests.at(-1)!.messages);
    expect(seen).toContain('new question');
    expect(seen).not.toContain('old question');
    expect((await history(copyId, B)).map((m: any) => m[1])).toContain('old question');
  });

  it('scrub_messages on export and strip_messages on import leave the history behind', async () => {
    const id = await newAgent();
    fake.push({ content: 'an answer' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('hello'), A);
    const scrubbed = (await exportOf(id, '?scrub_messages=true')).body;
    expect(scrubbed.agents[0].messages).toEqual([]);
    const full = (await exportOf(id)).body;
    const copyId = (await importFile(full, { strip_messages: 'true' })).body.agent_ids[0];
    expect(await history(copyId, B)).toEqual([]);

    // one conversation's messages; a conversation of another agent is a 404
    const conv = (await api(t, 'POST', `/v1/conversations/?agent_id=${id}`, {}, A)).body;
    fake.push({ content: 'in the conversation' });
    await api(
      t,
      'POST',
      `/v1/conversations/${conv.id}/messages`,
      say('psst', { streaming: false }),
      A,
    );
    const ofConv = (await exportOf(id, `?conversation_id=${conv.id}`)).body;
    expect(ofConv.agents[0].messages.slice(1).map((m: any) => m.content[0].text)).toEqual([
      'psst',
      'in the conversation',
    ]);
    const other = await newAgent();
    expect((await exportOf(other, `?conversation_id=${conv.id}`)).status).toBe(404);
  });

  it("a file Letta's server wrote: its Python tools are refused by name; without them it imports", async () => {
    const letta = JSON.parse(
      readFileSync(path.join(__dirname, '../fixtures/letta/basic-agent-v2.af'), 'utf8'),
    );
    const refused = await importFile(letta, { model: 'openai/gpt-4o-mini' });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toContain('analyze_data');
    expect(refused.body.message).not.toContain('memory_insert'); // a built-in here too

    // keep only the tools this server has (send_message, conversation_search) and their rules
    const ours = new Set(['send_message', 'conversation_search']);
    const [agent] = letta.agents;
    const kept = letta.tools.filter((x: any) => ours.has(x.name));
    const trimmed = {
      ...letta,
      agents: [
        {
          ...agent,
          tool_ids: kept.map((x: any) => x.id),
          tool_rules: agent.tool_rules.filter((r: any) => ours.has(r.tool_name)),
        },
      ],
    };
    const res = await importFile(trimmed, { model: 'openai/gpt-4o-mini' });
    expect(res.status).toBe(200);
    const id = res.body.agent_ids[0];
    const got = (await api(t, 'GET', `/v1/agents/${id}`, undefined, B)).body;
    expect(got.memory.blocks.map((b: any) => b.label).sort()).toEqual([
      'human',
      'persona',
      'project_context',
    ]);
    expect(got.tool_rules).toEqual([
      { tool_name: 'send_message', type: 'exit_loop' },
      { tool_name: 'conversation_search', type: 'continue_loop' },
    ]);
    // a MemGPT agent's assistant text is its inner monologue; send_message carries what it said
    expect(await history(id, B)).toEqual([
      ['reasoning_message', undefined],
      ['assistant_message', 'More human than human is our motto.'],
      ['user_message', expect.stringContaining('"type": "login"')],
      ['user_message', 'Test message for export'],
      ['reasoning_message', undefined],
      [
        'assistant_message',
        'Test message received successfully. Ready for further instructions or queries.',
      ],
    ]);
    fake.push({ content: 'hello again' });
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('still there?'), B);
    const seen = fake.requests.at(-1)!.messages;
    expect(seen.map((m: any) => m.role)).toEqual([
      'system',
      'assistant',
      'tool',
      'user',
      'user',
      'assistant',
      'tool',
      'user',
    ]);
  });

  it('several agents in one file (as Letta writes a group): one shared block, each tool created once, a failure creates nothing; exported together', async () => {
    const source = await newAgent({ name: 'first' });
    fake.push({ content: 'hello' });
    await api(t, 'POST', `/v1/agents/${source}/messages`, say('hi'), A);
    const good = (await exportOf(source)).body;
    const lookup = good.tools.find((x: any) => x.name === 'lookup');
    const tools = [...good.tools, { ...lookup, id: 'tool-7', name: 'shared_lookup' }];
    const a0 = { ...good.agents[0], tool_ids: [...good.agents[0].tool_ids, 'tool-7'] };
    const a1 = {
      ...a0,
      id: 'agent-1',
      name: 'second',
      messages: [],
      in_context_message_ids: [],
    };
    const multi = {
      ...good,
      tools,
      agents: [a0, a1],
      groups: [{ id: 'group-0', agent_ids: ['agent-0', 'agent-1'], manager_type: 'round_robin' }],
    };
    const before = (await api(t, 'GET', '/v1/agents/', undefined, B)).body.length;

    const failing = await importFile({
      ...multi,
      agents: [a0, { ...a1, tool_rules: [{ type: 'cooldown', tool_name: 'lookup' }] }],
    });
    expect(failing.status).toBe(400);
    expect((await api(t, 'GET', '/v1/agents/', undefined, B)).body.length).toBe(before);
    expect((await api(t, 'GET', '/v1/tools/?name=shared_lookup', undefined, B)).body).toEqual([]);

    const res = await importFile(multi);
    expect(res.status).toBe(200);
    expect(res.body.agent_ids).toHaveLength(2);
    const [first, second] = await Promise.all(
      res.body.agent_ids.map(
        async (id: string) => (await api(t, 'GET', `/v1/agents/${id}`, undefined, B)).body,
      ),
    );
    expect([first.name, second.name]).toEqual(['first', 'second']);
    expect(first.memory.blocks[0].id).toBe(second.memory.blocks[0].id);
    expect((await api(t, 'GET', '/v1/tools/?name=shared_lookup', undefined, B)).body).toHaveLength(
      1,
    );
    for (const a of [first, second])
      expect(a.tools.map((x: any) => x.name).sort()).toEqual([
        'lookup',
        'send_message',
        'shared_lookup',
      ]);
    expect((await history(first.id, B)).length).toBeGreaterThan(0);
    expect(await history(second.id, B)).toEqual([]);
    // an edit through one agent is what the other sees
    const edit = await api(
      t,
      'PATCH',
      `/v1/agents/${first.id}/core-memory/blocks/human`,
      { value: 'Ada Lovelace' },
      B,
    );
    expect(edit.status).toBe(200);
    const seen = (await api(t, 'GET', `/v1/agents/${second.id}`, undefined, B)).body;
    expect(seen.memory.blocks[0].value).toBe('Ada Lovelace');

    // the pair exported as one file (POST /v1/agents/export): the shared block and tools listed once
    const pair = await api(t, 'POST', '/v1/agents/export', { agent_ids: res.body.agent_ids }, B);
    expect(pair.status).toBe(200);
    expect(pair.body.agents.map((a: any) => [a.id, a.name, a.block_ids])).toEqual([
      ['agent-0', 'first', ['block-0']],
      ['agent-1', 'second', ['block-0']],
    ]);
    expect(pair.body.blocks).toEqual([expect.objectContaining({ value: 'Ada Lovelace' })]);
    expect(pair.body.tools.map((x: any) => x.name).sort()).toEqual([
      'lookup',
      'send_message',
      'shared_lookup',
    ]);
    expect(pair.body.agents[1].tool_ids).toEqual(pair.body.agents[0].tool_ids);
    const back = await importFile(pair.body, { append_copy_suffix: 'true' }, A);
    expect(back.status).toBe(200);
    const copies = await Promise.all(
      back.body.agent_ids.map(
        async (id: string) => (await api(t, 'GET', `/v1/agents/${id}`, undefined, A)).body,
      ),
    );
    expect(copies.map((c) => c.name)).toEqual(['first_copy', 'second_copy']);
    expect(copies[0].memory.blocks[0].id).toBe(copies[1].memory.blocks[0].id);
    expect(await history(copies[0].id, A)).toEqual(await history(first.id, B));
    expect((await api(t, 'POST', '/v1/agents/export', { agent_ids: [first.id] }, A)).status).toBe(
      404,
    );
    const tooMany = await api(
      t,
      'POST',
      '/v1/agents/export',
      { agent_ids: ['a', 'b', 'c', 'd'] },
      B,
    );
    expect(tooMany).toMatchObject({ status: 400, body: { code: 'LIMIT_EXCEEDED' } });

    const crowd = await importFile({
      ...multi,
      agents: Array.from({ length: 4 }, (_, i) => ({ ...a1, id: `agent-${i}` })),
    });
    expect(crowd).toMatchObject({ status: 400, body: { code: 'LIMIT_EXCEEDED' } });
  });

  it('hostile and malformed files: clear 4xx, nothing created, never another tenant', async () => {
    const id = await newAgent();
    expect((await exportOf(id, '', B)).status).toBe(404);
    const good = (await exportOf(id)).body;
    const agentsBefore = (await api(t, 'GET', '/v1/agents/', undefined, B)).body.length;

    const notJson = await importFile('{not json');
    expect(notJson).toMatchObject({ status: 400, body: { code: 'AGENT_FILE_INVALID' } });
    // a multipart upload skips the JSON body parser: the file's nesting is bounded all the same
    const deep = await importFile(
      `{"agents":[{"id":"a","name":"x","metadata":${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}]}`,
    );
    expect(deep).toMatchObject({ status: 400, body: { code: 'JSON_TOO_DEEP' } });
    const twice = await importFile({ ...good, agents: [good.agents[0], good.agents[0]] });
    expect(twice.status).toBe(400);
    expect(twice.body.details.problems[0].path).toBe('agents[1].id');
    const none = await importFile({ ...good, agents: [] });
    expect(none.body.details.problems[0].path).toBe('agents');
    // a Letta Python tool the tenant does not have: agent creation refuses the unknown tool
    const python = {
      ...good,
      tools: [...good.tools, { id: 'tool-9', name: 'py_tool', source_code: 'def py_tool(): pass' }],
      agents: [{ ...good.agents[0], tool_ids: [...good.agents[0].tool_ids, 'tool-9'] }],
    };
    const refused = await importFile(python);
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.body)).toContain('py_tool');
    const badRule = await importFile({
      ...good,
      agents: [{ ...good.agents[0], tool_rules: [{ type: 'cooldown', tool_name: 'lookup' }] }],
    });
    expect(badRule.status).toBe(400);
    const badRef = await importFile({
      ...good,
      agents: [{ ...good.agents[0], block_ids: ['block-404'] }],
    });
    expect(badRef.body.details.problems[0].path).toBe('agents[0].block_ids[0]');
    const many = Array.from({ length: 51 }, (_, i) => ({
      id: `message-${i}`,
      role: 'user',
      content: [{ type: 'text', text: `m${i}` }],
    }));
    const tooMany = await importFile({ ...good, agents: [{ ...good.agents[0], messages: many }] });
    expect(tooMany).toMatchObject({ status: 400, body: { code: 'LIMIT_EXCEEDED' } });
    const huge = await importFile({ ...good, padding: 'x'.repeat(300_000) });
    expect(huge.status).toBe(413);
    const noFile = await fetch(`${t.baseUrl}/v1/agents/import`, {
      method: 'POST',
      headers: B,
      body: new FormData(),
    });
    expect(noFile.status).toBe(400);
    expect((await api(t, 'GET', '/v1/agents/', undefined, B)).body.length).toBe(agentsBefore);
  });
});
