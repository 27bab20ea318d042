import Letta from '@letta-ai/letta-client';
import { AgentsService } from '../../src/agents/agents.service';
import type { ToolInvoker } from '../../src/core/executor/contracts';
import { TOOL_INVOKER } from '../../src/rules/tokens';
import { ToolsService } from '../../src/tools/tools.service';
import { startApp, TestApp } from '../support/app-harness';

// The SDK's response types do not know our extension fields; tests read them loosely.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;
type JsonResponse = Omit<Response, 'json'> & { json(): Promise<Json> };

/** Agents over the Letta SDK, as a Letta user would drive them. */
describe('agents API (Letta SDK)', () => {
  let t: TestApp;
  let client: Letta;

  beforeAll(async () => {
    t = await startApp();
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'x', maxRetries: 0 });
  });
  afterAll(() => t.close());

  const raw = (
    path: string,
    init: { method?: string; body?: unknown } = {},
  ): Promise<JsonResponse> =>
    fetch(t.baseUrl + path, {
      method: init.method ?? 'GET',
      headers: { 'content-type': 'application/json' },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }) as Promise<JsonResponse>;

  it('creates, retrieves, updates and deletes an agent', async () => {
    const created = (await client.agents.create({
      name: 'support',
      system: 'Be kind.',
      memory_blocks: [{ label: 'human', value: 'Name: Ann', limit: 100 }],
      tags: ['a', 'b'],
      metadata: { team: 'x' },
      model: 'openai/gpt-4o-mini',
      tool_rules: [{ type: 'exit_loop', tool_name: 'send_message' }],
    } as never)) as unknown as Json;

    expect(created.id).toMatch(/^agent-[0-9a-f-]{36}$/);
    expect(created).toMatchObject({
      name: 'support',
      system: 'Be kind.',
      agent_type: 'memgpt_agent',
      tags: ['a', 'b'],
      metadata: { team: 'x' },
      model: 'openai/gpt-4o-mini',
      llm_config: {
        model: 'gpt-4o-mini',
        model_endpoint_type: 'openai',
        model_endpoint: t.config.models.openai.base_url,
        context_window: 128000,
      },
      // Letta's base rules follow the given one (its exit_loop on send_message is not repeated)
      tool_rules: [
        { type: 'exit_loop', tool_name: 'send_message' },
        { type: 'continue_loop', tool_name: 'core_memory_append' },
        { type: 'continue_loop', tool_name: 'core_memory_replace' },
        { type: 'continue_loop', tool_name: 'conversation_search' },
      ],
      last_stop_reason: null,
      pending_approval: null,
    });
    expect(created.memory.blocks).toEqual([
      {
        id: expect.stringMatching(/^block-/),
        label: 'human',
        value: 'Name: Ann',
        limit: 100,
        description: null,
        read_only: false,
        metadata: {},
        tags: [],
        is_template: false,
        // Letta Cloud's fields, answered as they are here
        template_name: null,
        template_id: null,
        base_template_id: null,
        deployment_id: null,
        entity_id: null,
        preserve_on_migration: false,
        hidden: null,
        project_id: null,
        created_by_id: null,
        last_updated_by_id: null,
      },
    ]);
    expect(created.tools.map((x: { name: string }) => x.name)).toEqual([
      'send_message',
      'core_memory_append',
      'core_memory_replace',
      'conversation_search',
    ]);
    expect(created.tools[0]).toMatchObject({
      id: expect.stringMatching(/^tool-/),
      json_schema: { name: 'send_message', parameters: { type: 'object' } },
      safety: 'read_only',
      kind: 'builtin',
    });
    expect(new Date(created.created_at).toISOString()).toBe(created.created_at);

    const got = (await client.agents.retrieve(created.id)) as unknown as Json;
    // Letta's message_ids (in-context messages: none yet), as the create answered them
    expect(got.message_ids).toEqual([]);
    expect(got).toEqual(created);

    const updated = (await client.agents.update(created.id, {
      description: 'first line',
      tags: ['c'],
    })) as unknown as Json;
    expect(updated).toMatchObject({
      description: 'first line',
      tags: ['c'],
      name: 'support',
      system: 'Be kind.',
    });
    expect(updated.memory.blocks[0].id).toBe(created.memory.blocks[0].id);

    const deleted = await client.agents.delete(created.id);
    expect(deleted).toEqual({ message: expect.stringContaining(created.id) });
    await expect(client.agents.retrieve(created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('defaults to the offline scripted model and keeps extension fields', async () => {
    const a = (await client.agents.create({
      name: 'offline',
      include_base_tools: false,
      tools: ['send_message'],
      tool_executor: { tool_timeout_seconds: 5 },
      model_script: [
        { content: 'hi' },
        { tool_calls: [{ name: 'send_message', arguments: { message: 'x' } }] },
      ],
      max_steps: 3,
    } as never)) as unknown as Json;
    expect(a).toMatchObject({
      model: 'scripted/default',
      llm_config: { model_endpoint_type: 'scripted' },
      tool_executor: {
        tool_timeout_seconds: 5,
        consent_timeout_seconds: 300,
        dedupe_window_seconds: 300,
      },
      model_script: [
        { content: 'hi' },
        { tool_calls: [{ name: 'send_message', arguments: { message: 'x' } }] },
      ],
      max_steps: 3,
    });
    expect(a.tools.map((x: { name: string }) => x.name)).toEqual(['send_message']);
  });

  it('pages newest first with limit/after (the SDK iterates to the end) and filters by name and tags', async () => {
    const t2 = await startApp();
    try {
      const c2 = new Letta({ baseURL: t2.baseUrl, apiKey: 'x', maxRetries: 0 });
      const ids: string[] = [];
      const tags = [['red'], ['red', 'blue'], ['blue'], [], ['red', 'blue', 'green']];
      for (let i = 0; i < 5; i++)
        ids.push((await c2.agents.create({ name: `p${i}`, tags: tags[i] })).id);
      const newestFirst = [...ids].reverse();

      const page1 = await c2.agents.list({ limit: 2 });
      expect(page1.getPaginatedItems().map((a) => a.id)).toEqual(newestFirst.slice(0, 2));
      const all: string[] = [];
      for await (const a of c2.agents.list({ limit: 2 })) all.push(a.id);
      expect(all).toEqual(newestFirst);

      const after = await (await raw2(t2, `/v1/agents/?limit=2&after=${newestFirst[1]}`)).json();
      expect(after.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(2, 4));
      const before = await (await raw2(t2, `/v1/agents/?limit=2&before=${newestFirst[3]}`)).json();
      expect(before.map((a: { id: string }) => a.id)).toEqual(newestFirst.slice(1, 3));
      const asc = await (await raw2(t2, `/v1/agents?order=asc&limit=3`)).json();
      expect(asc.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 3));

      const byName = await c2.agents.list({ name: 'p2' });
      expect(byName.getPaginatedItems().map((a) => a.id)).toEqual([ids[2]]);
      const anyTag = await c2.agents.list({ tags: ['red', 'green'] });
      expect(anyTag.getPaginatedItems().map((a) => a.id)).toEqual([ids[4], ids[1], ids[0]]);
      const allTags = await c2.agents.list({ tags: ['red', 'blue'], match_all_tags: true });
      expect(allTags.getPaginatedItems().map((a) => a.id)).toEqual([ids[4], ids[1]]);
    } finally {
      await t2.close();
    }
  });

  it('accepts tool_ids and nulls the way Letta clients send them', async () => {
    const tools = (await (await raw('/v1/tools/')).json()) as unknown as Json[];
    const search = tools.find((x) => x.name === 'conversation_search')!;
    const a = (await client.agents.create({
      name: null,
      include_base_tools: false,
      tool_ids: [search.id],
      tags: null,
      memory_blocks: [
        { label: 'human', value: 'x', limit: null, description: null, read_only: null },
      ],
    } as never)) as unknown as Json;
    expect(a.tools.map((x: Json) => x.name)).toEqual(['conversation_search']);
    expect(a.tags).toEqual([]);
    expect(a.memory.blocks[0]).toMatchObject({ limit: 100000, read_only: false });
    const bad = await raw('/v1/agents/', { method: 'POST', body: { tool_ids: ['tool-nope'] } });
    expect(bad.status).toBe(400);
  });

  it('a null system, tool_rules, description or metadata is Letta\'s "not given": the default prompt on create, unchanged by an update (the rules were dropped)', async () => {
    const plain = (await client.agents.create({ name: 'plain' })) as unknown as Json;
    const a = (await client.agents.create({
      name: 'nulls',
      system: null,
      tool_rules: [{ type: 'max_count_per_step', tool_name: 'send_message', max_count_limit: 2 }],
    } as never)) as unknown as Json;
    expect(a.system).toBe(plain.system);
    expect(a.system).not.toBe('');
    const updated = (await client.agents.update(a.id, {
      system: null,
      tool_rules: null,
      description: 'changed alone',
    })) as unknown as Json;
    expect(updated).toMatchObject({
      description: 'changed alone',
      system: a.system,
      tool_rules: a.tool_rules,
    });
    expect(updated.tool_rules).toContainEqual({
      type: 'max_count_per_step',
      tool_name: 'send_message',
      max_count_limit: 2,
    });
    // an empty list is how rules are removed
    const cleared = (await client.agents.update(a.id, { tool_rules: [] })) as unknown as Json;
    expect(cleared.tool_rules).toEqual([]);
    // as Letta's update, which sets only the fields given not null
    await client.agents.update(a.id, { metadata: { team: 'ops' } });
    const kept = (await client.agents.update(a.id, {
      description: null,
      metadata: null,
      tags: ['t'],
    })) as unknown as Json;
    expect(kept).toMatchObject({
      description: 'changed alone',
      metadata: { team: 'ops' },
      tags: ['t'],
    });
  });

  it("null in every Letta list, model and settings field of an update keeps the agent's, as Letta's update_agent_async", async () => {
    const block = await client.blocks.create({ label: 'shared', value: 'v' });
    const a = (await client.agents.create({
      name: 'keeps',
      include_base_tools: false,
      tools: ['conversation_search'],
      block_ids: [block.id],
      tags: ['t'],
      model: 'scripted/default',
      context_window_limit: 4000,
      secrets: { TEAM_TOKEN: 'tok' },
    })) as unknown as Json;
    const same = (v: Json) => ({
      tools: (v.tools as Json[]).map((x) => x.name),
      blocks: (v.memory as Json).blocks,
      tags: v.tags,
      llm_config: v.llm_config,
      embedding_config: v.embedding_config,
      tool_rules: v.tool_rules,
      system: v.system,
      timezone: v.timezone,
      secrets: ((v.secrets as Json[] | undefined) ?? []).map((x) => x.key),
    });
    const before = same(await client.agents.retrieve(a.id));
    expect(before).toMatchObject({
      tools: ['conversation_search'],
      blocks: [expect.objectContaining({ id: block.id })],
      tags: ['t'],
      llm_config: { context_window: 4000 },
      secrets: ['TEAM_TOKEN'],
    });
    const res = (await client.agents.update(a.id, {
      name: null,
      system: null,
      tool_ids: null,
      block_ids: null,
      identity_ids: null,
      tags: null,
      tool_rules: null,
      llm_config: null,
      model: null,
      model_settings: null,
      context_window_limit: null,
      embedding: null,
      embedding_config: null,
      secrets: null,
      tool_exec_environment_variables: null,
      response_format: null,
      compaction_settings: null,
      message_ids: null,
      timezone: null,
      hidden: null,
      enable_sleeptime: null,
      max_files_open: null,
      per_file_view_window_char_limit: null,
    })) as unknown as Json;
    expect(res.name).toBe('keeps');
    expect(same((await client.agents.retrieve(a.id)) as unknown as Json)).toEqual(before);
  });

  it('toggles requires_approval (both body spellings) and attaches/detaches tools', async () => {
    // without Letta's base rules, so that the approval rules are the agent's only ones
    const a = await client.agents.create({ name: 'approvals', include_base_tool_rules: false });
    const on = await (
      await raw(`/v1/agents/${a.id}/tools/approval/core_memory_append`, {
        method: 'PATCH',
        body: { body_requires_approval: true },
      })
    ).json();
    expect(on.tool_rules).toEqual([{ type: 'requires_approval', tool_name: 'core_memory_append' }]);
    const again = await (
      await raw(`/v1/agents/${a.id}/tools/approval/core_memory_append`, {
        method: 'PATCH',
        body: { requires_approval: true },
      })
    ).json();
    expect(again.tool_rules).toHaveLength(1);
    const off = await (
      await raw(`/v1/agents/${a.id}/tools/approval/core_memory_append`, {
        method: 'PATCH',
        body: { requires_approval: false },
      })
    ).json();
    expect(off.tool_rules).toEqual([]);
    const missing = await raw(`/v1/agents/${a.id}/tools/approval/ghost`, {
      method: 'PATCH',
      body: { requires_approval: true },
    });
    expect(missing.status).toBe(400);

    const search = (await client.agents.retrieve(a.id)).tools.find(
      (x) => x.name === 'conversation_search',
    )!;
    // detach and re-attach never loses a tool's consent rule (Letta keeps every rule)
    await raw(`/v1/agents/${a.id}/tools/approval/conversation_search`, {
      method: 'PATCH',
      body: { requires_approval: true },
    });
    const detached = await (
      await raw(`/v1/agents/${a.id}/tools/detach/${search.id}`, { method: 'PATCH' })
    ).json();
    expect(detached.tools.map((x: { name: string }) => x.name)).not.toContain(
      'conversation_search',
    );
    const attached = await (
      await raw(`/v1/agents/${a.id}/tools/attach/${search.id}`, { method: 'PATCH' })
    ).json();
    expect(attached.tools.map((x: { name: string }) => x.name)).toContain('conversation_search');
    expect(attached.tool_rules).toEqual([
      { type: 'requires_approval', tool_name: 'conversation_search' },
    ]);
  });

  it('gives other modules a plain record, memory edits within limits, stop reasons and pending_approval', async () => {
    const agents = t.app.get(AgentsService);
    const a = await client.agents.create({
      name: 'memory',
      memory_blocks: [
        { label: 'human', value: 'Ann', limit: 10 },
        { label: 'policy', value: 'fixed', read_only: true },
      ],
    });
    const record = await agents.getForTenant('default', a.id);
    expect(record).toMatchObject({
      id: a.id,
      tenant_id: 'default',
      name: 'memory',
      model: 'scripted/default',
    });
    expect(record.tool_executor.tool_timeout_seconds).toBe(
      t.config.tool_executor.tool_timeout_seconds,
    );

    await expect(agents.updateMemoryBlock('default', a.id, 'human', 'Bob')).resolves.toMatchObject({
      value: 'Bob',
    });
    await expect(
      agents.updateMemoryBlock('default', a.id, 'human', 'x'.repeat(11)),
    ).rejects.toMatchObject({
      code: 'BLOCK_LIMIT_EXCEEDED',
    });
    await expect(agents.updateMemoryBlock('default', a.id, 'policy', 'y')).rejects.toMatchObject({
      code: 'BLOCK_READ_ONLY',
    });
    await expect(agents.updateMemoryBlock('other', a.id, 'human', 'y')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });

    // The core memory built-ins run through TOOL_INVOKER.
    const invoker = t.app.get<ToolInvoker>(TOOL_INVOKER);
    const [append, replace, send] = await t.app
      .get(ToolsService)
      .resolveAgentTools('default', ['core_memory_append', 'core_memory_replace', 'send_message']);
    const ctx = {
      tenantId: 'default',
      agentId: a.id,
      runId: 'run-1',
      toolCallId: 'c1',
      signal: new AbortController().signal,
    };
    const ok = await invoker.invoke(append, { label: 'human', content: 'Cy' }, ctx);
    expect(ok.status).toBe('success');
    expect(JSON.parse(ok.value)).toMatchObject({ status: 'OK', message: 'None' });
    expect((await agents.getForTenant('default', a.id)).blocks[0].value).toBe('Bob\nCy');
    const bad = await invoker.invoke(
      replace,
      { label: 'human', old_content: 'zzz', new_content: 'q' },
      ctx,
    );
    expect(bad.status).toBe('error');
    expect(JSON.parse(bad.value).message).toMatch(/not found in memory block/);
    const tooLong = await invoker.invoke(
      append,
      { label: 'human', content: 'a long addition' },
      ctx,
    );
    expect(tooLong.status).toBe('error');
    expect((await invoker.invoke(send, { message: 'hi' }, ctx)).status).toBe('success');

    await agents.setLastStopReason('default', a.id, 'requires_approval');
    agents.registerPendingApprovalSource((_tenant, id) =>
      Promise.resolve(id === a.id ? { tool_call_id: 'c9' } : null),
    );
    const shown = (await client.agents.retrieve(a.id)) as unknown as Record<string, unknown>;
    expect(shown).toMatchObject({
      last_stop_reason: 'requires_approval',
      pending_approval: { tool_call_id: 'c9' },
    });
    agents.registerPendingApprovalSource(() => Promise.resolve(null));
  });
});

function raw2(t: TestApp, path: string): Promise<JsonResponse> {
  return fetch(t.baseUrl + path) as Promise<JsonResponse>;
}
