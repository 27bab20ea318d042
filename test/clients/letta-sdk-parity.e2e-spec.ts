/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { api, createAgent, LoopEnv, runEnded, startLoopEnv } from '../support/processing-fixtures';
import { fakeClock } from '../e2e/consent-helpers';

/**
 * What a Letta user reads back through the SDK (@letta-ai/letta-client 1.12, unmodified) where this server
 * once answered differently from Letta's (0.16.8): one row per difference found, each as the user's call.
 */
describe("clients: the Letta SDK's answers as Letta's server gives them", () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;

  beforeAll(async () => {
    env = await startLoopEnv([]);
    ({ t, fake } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  // conversation_search goes on (Letta's continue_loop rule) to send_message: two model calls a request
  const SEARCH = { name: 'conversation_search', arguments: { query: 'tea' } };
  const ANSWER = { name: 'send_message', arguments: { message: 'nothing about tea' } };

  /**
   * One request sent and one streamed with stream_tokens (the model's answers stream too), each after
   * `script` queued its model turns: the first's response, the second's frames, both run ids.
   */
  async function searchThenAnswer(agentId: string, script: () => void) {
    script();
    const sent: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'tea?' }],
    });
    script();
    const frames: any[] = [];
    const stream = await client.agents.messages.stream(agentId, {
      messages: [{ role: 'user', content: 'tea again?' }],
      stream_tokens: true,
    });
    for await (const f of stream as AsyncIterable<any>) frames.push(f);
    return { sent, frames, streamed: frames.find((f) => f.run_id).run_id as string };
  }

  it("a run sent through a conversation names it (Run.conversation_id); the agent's own runs say null", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'direct' }, { content: 'in the conversation' });
    const direct: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const conv = await client.conversations.create({ agent_id: agentId });
    const frames: any[] = [];
    const stream = await client.conversations.messages.create(conv.id, {
      messages: [{ role: 'user', content: 'hi there' }],
    });
    for await (const f of stream as AsyncIterable<any>) frames.push(f);
    const runId = frames.find((f) => f.run_id).run_id as string;
    expect(await client.runs.retrieve(runId)).toMatchObject({ conversation_id: conv.id });
    expect(await client.runs.retrieve(direct.run_id)).toMatchObject({ conversation_id: null });
    const listed = (await client.runs.list({ agent_id: agentId })).getPaginatedItems();
    expect(Object.fromEntries(listed.map((r) => [r.id, r.conversation_id]))).toEqual({
      [runId]: conv.id,
      [direct.run_id]: null,
    });
  });

  it("a memgpt agent's search goes on to its answer after Letta's heartbeat: listed as a user_message, left out of the answer and the stream", async () => {
    // conversation_search has Letta's base continue_loop rule, send_message its exit_loop one
    const agentId = await createAgent(t, fake);
    const search = { name: 'conversation_search', arguments: { query: 'tea' } };
    const answer = { name: 'send_message', arguments: { message: 'nothing about tea' } };
    fake.push({ tool_calls: [search] }, { tool_calls: [answer] });
    const res: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'what did I say about tea?' }],
    });
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    expect(res.messages.map((m: any) => m.message_type)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    const history = (
      await client.agents.messages.list(agentId, { order: 'asc' })
    ).getPaginatedItems() as any[];
    expect(history.map((m) => m.message_type)).toEqual([
      'user_message',
      'tool_call_message',
      'tool_return_message',
      'user_message',
      'assistant_message',
    ]);
    const heartbeat = JSON.parse(history[3].content);
    expect(heartbeat).toEqual({
      type: 'heartbeat',
      reason:
        '[This is an automated system message hidden from the user] Continuing: continue tool rule.',
      time: expect.any(String),
    });
    expect(history[3].step_id).toBe(history[2].step_id);

    fake.push({ tool_calls: [search] }, { tool_calls: [answer] });
    const frames: any[] = [];
    const stream = await client.agents.messages.stream(agentId, {
      messages: [{ role: 'user', content: 'and now?' }],
    });
    for await (const f of stream as AsyncIterable<any>) frames.push(f);
    expect(frames.map((f) => f.message_type)).not.toContain('user_message');
    expect(frames.find((f) => f.message_type === 'stop_reason').stop_reason).toBe('end_turn');
  });

  it("a block made without a limit has Letta's CORE_MEMORY_BLOCK_CHAR_LIMIT (100000), standalone or in memory_blocks", async () => {
    const block = await client.blocks.create({ label: 'human', value: 'test' });
    expect(block.limit).toBe(100000);
    const agent = await client.agents.create({
      model: 'scripted/default',
      memory_blocks: [{ label: 'persona', value: 'test1' }],
    });
    expect(agent.memory.blocks[0].limit).toBe(100000);
    const long = 'x'.repeat(6000);
    expect(
      await client.agents.blocks.update('persona', { agent_id: agent.id, value: long }),
    ).toMatchObject({ value: long, limit: 100000 });
  });

  it("lists without an order take Letta's default: blocks oldest first, a block's agents and a run's steps newest first", async () => {
    const first = await client.blocks.create({ label: 'order-a', value: '1' });
    const second = await client.blocks.create({ label: 'order-b', value: '2' });
    const blocks = (await client.blocks.list({ label_search: 'order-' })).getPaginatedItems();
    expect(blocks.map((b) => b.id)).toEqual([first.id, second.id]);

    const older = await createAgent(t, fake, { include_base_tools: false, block_ids: [first.id] });
    const newer = await createAgent(t, fake, { include_base_tools: false, block_ids: [first.id] });
    const agents = (await client.blocks.agents.list(first.id)).getPaginatedItems();
    expect(agents.map((a) => a.id)).toEqual([newer, older]);

    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      tools: ['conversation_search'],
    });
    fake.push(
      {
        tool_calls: [
          { name: 'conversation_search', arguments: { query: 'x', request_heartbeat: true } },
        ],
      },
      { content: 'found nothing' },
    );
    const res: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'search' }],
    });
    const steps = (await client.runs.steps.list(res.run_id)).getPaginatedItems() as any[];
    expect(steps).toHaveLength(2);
    expect(steps.map((s) => s.step_number)).toEqual([2, 1]);
    const asc = (await client.runs.steps.list(res.run_id, { order: 'asc' })).getPaginatedItems();
    expect(asc.map((s: any) => s.step_number)).toEqual([1, 2]);
  });

  it("a tool made with default_requires_approval asks before it runs on every agent it is given to (Letta's requires_approval rule)", async () => {
    const declaration = {
      name: 'wire_money',
      description: 'sends money',
      parameters: { type: 'object', properties: { cents: { type: 'number' } } },
      safety: 'side_effecting',
      kind: 'http',
      http: { url: `${env.tools.baseUrl}/tool/wire_money`, method: 'POST' },
      default_requires_approval: true,
    };
    const tool: any = await client.tools.create(declaration as any);
    expect(tool.default_requires_approval).toBe(true);
    expect(await client.tools.retrieve(tool.id)).toMatchObject({ default_requires_approval: true });
    const approval = { type: 'requires_approval', tool_name: 'wire_money' };

    // given at creation (by name or id), the agent gets the rule, as Letta's create_agent adds it
    const byName = await client.agents.create({
      model: 'scripted/default',
      include_base_tools: false,
      tools: ['wire_money'],
    });
    expect(byName.tool_rules).toEqual([approval]);
    const byId = await client.agents.create({
      model: 'scripted/default',
      include_base_tools: false,
      tool_ids: [tool.id],
    });
    expect(byId.tool_rules).toEqual([approval]);
    // attached later, likewise, once (a second attach adds nothing)
    const later = await client.agents.create({
      model: 'scripted/default',
      include_base_tools: false,
    });
    await client.agents.tools.attach(tool.id, { agent_id: later.id });
    const attached = await client.agents.tools.attach(tool.id, { agent_id: later.id });
    expect(attached!.tool_rules).toEqual([approval]);

    // the model's call parks for approval and the tool server never hears of it
    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      tools: ['wire_money'],
    });
    fake.push({ tool_calls: [{ name: 'wire_money', arguments: { cents: 500 } }] });
    const res = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'pay' }],
    });
    expect(res.stop_reason.stop_reason).toBe('requires_approval');
    expect(res.messages.at(-1)).toMatchObject({ message_type: 'approval_request_message' });
    expect(env.tools.calls).toEqual([]);

    // turned off on the tool, agents given it from then on get no rule (those that have it keep it)
    const off: any = await client.tools.update(tool.id, { default_requires_approval: false });
    expect(off.default_requires_approval).toBe(false);
    const after = await client.agents.create({
      model: 'scripted/default',
      include_base_tools: false,
      tools: ['wire_money'],
    });
    expect(after.tool_rules).toEqual([]);
    expect((await client.agents.retrieve(byName.id)).tool_rules).toEqual([approval]);
    // a tool without it says null, as Letta's
    const plain: any = await client.tools.create({
      ...declaration,
      name: 'read_balance',
      default_requires_approval: undefined,
    } as any);
    expect(plain.default_requires_approval).toBeNull();
  });

  it('block tags: set on create (standalone or in memory_blocks), replaced on update, listed by any or all tags', async () => {
    const red = await client.blocks.create({ label: 'tag-a', value: '1', tags: ['red', 'big'] });
    expect(red.tags).toEqual(['red', 'big']);
    const blue = await client.blocks.create({ label: 'tag-b', value: '2', tags: ['blue', 'big'] });
    const none = await client.blocks.create({ label: 'tag-c', value: '3' });
    expect(none.tags).toEqual([]);
    const agent = await client.agents.create({
      model: 'scripted/default',
      memory_blocks: [{ label: 'human', value: 'x', tags: ['red'] }],
    });
    const own = agent.memory.blocks[0];
    expect(own.tags).toEqual(['red']);
    const ids = async (q: Record<string, unknown>) =>
      (await client.blocks.list(q as any)).getPaginatedItems().map((b) => b.id);
    expect(await ids({ tags: ['red'] })).toEqual([red.id, own.id]);
    expect(await ids({ tags: ['red', 'blue'] })).toEqual([red.id, blue.id, own.id]);
    expect(await ids({ tags: ['red', 'big'], match_all_tags: true })).toEqual([red.id]);
    expect(await ids({ tags: ['re'] })).toEqual([]); // whole tags, not parts
    // nor the end of a tag holding a quote: "y" is written inside ["x\"y"]
    const quoted = await client.blocks.create({ label: 'tag-q', value: '4', tags: ['x"y', 'z'] });
    expect(await ids({ tags: ['y'] })).toEqual([]);
    expect(await ids({ tags: ['x"y'] })).toEqual([quoted.id]);
    expect(await ids({ tags: ['z'] })).toEqual([quoted.id]);
    await client.blocks.delete(quoted.id);
    // an update's tags replace the block's; one without tags keeps them
    expect(await client.blocks.update(blue.id, { tags: ['red'] })).toMatchObject({ tags: ['red'] });
    expect(await client.blocks.update(blue.id, { value: '2b' })).toMatchObject({ tags: ['red'] });
    expect(
      await client.agents.blocks.update('human', { agent_id: agent.id, tags: [] }),
    ).toMatchObject({ tags: [] });
    expect(await ids({ tags: ['red'] })).toEqual([red.id, blue.id]);
    expect((await client.blocks.retrieve(own.id!)).tags).toEqual([]);
    await expect(
      client.blocks.create({ label: 'tag-d', value: '', tags: [''] }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it('block hidden: kept on create (standalone or in memory_blocks) and update, hidden blocks left out of blocks.list unless show_hidden_blocks', async () => {
    const shown = await client.blocks.create({ label: 'hid-a', value: '1' });
    expect(shown.hidden).toBeNull();
    const hidden = await client.blocks.create({ label: 'hid-b', value: '2', hidden: true });
    expect(hidden.hidden).toBe(true);
    const unhidden = await client.blocks.create({ label: 'hid-c', value: '3', hidden: false });
    const agent = await client.agents.create({
      model: 'scripted/default',
      memory_blocks: [{ label: 'human', value: 'x', hidden: true }],
    });
    const own = agent.memory.blocks[0];
    expect(own.hidden).toBe(true);
    expect((await client.blocks.retrieve(hidden.id)).hidden).toBe(true);

    const mine = new Set([shown.id, hidden.id, unhidden.id, own.id]);
    const ids = async (q: Record<string, unknown> = {}) =>
      (await client.blocks.list({ limit: 1000, ...q } as any))
        .getPaginatedItems()
        .map((b) => b.id)
        .filter((id) => mine.has(id));
    // Letta's filter: hidden IS NULL OR hidden = false
    expect(await ids()).toEqual([shown.id, unhidden.id]);
    expect(await ids({ label_search: 'hid-' })).toEqual([shown.id, unhidden.id]);
    expect(await ids({ show_hidden_blocks: true })).toEqual([
      shown.id,
      hidden.id,
      unhidden.id,
      own.id,
    ]);
    // the agent's own memory lists (and sees) its hidden block
    const agentBlocks = (await client.agents.blocks.list(agent.id)).getPaginatedItems();
    expect(agentBlocks.map((b) => b.id)).toEqual([own.id]);

    // an update sets what it gives; null or nothing keeps it (Letta's BlockUpdate drops nulls)
    expect(await client.blocks.update(hidden.id, { hidden: false })).toMatchObject({
      hidden: false,
    });
    expect(await client.blocks.update(hidden.id, { hidden: null })).toMatchObject({
      hidden: false,
    });
    expect(await client.blocks.update(shown.id, { hidden: true })).toMatchObject({ hidden: true });
    expect(await client.blocks.update(shown.id, { value: '1b' })).toMatchObject({ hidden: true });
    expect(
      await client.agents.blocks.update('human', { agent_id: agent.id, hidden: false }),
    ).toMatchObject({ hidden: false });
    expect(await ids()).toEqual([hidden.id, unhidden.id, own.id]);
    await expect(
      client.blocks.create({ label: 'hid-d', value: '', hidden: 'yes' as any }),
    ).rejects.toMatchObject({ status: 400 });
    await expect(client.blocks.list({ show_hidden_blocks: 'maybe' } as any)).rejects.toMatchObject({
      status: 400,
    });
  });

  it("override_model answers one request with another model and leaves the agent's own as it was", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const before = await client.agents.retrieve(agentId);
    const res = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hello' }],
      override_model: 'scripted/default',
    });
    expect(res.messages.map((m: any) => m.content)).toEqual(['You said: hello']);
    expect(fake.requests).toHaveLength(0);
    const steps = (await client.runs.steps.list((res as any).run_id)).getPaginatedItems();
    expect(steps.map((s) => s.model)).toEqual(['default']);
    // streamed too
    const frames: any[] = [];
    for await (const f of await client.agents.messages.stream(agentId, {
      messages: [{ role: 'user', content: 'again' }],
      override_model: 'scripted/default',
    }))
      frames.push(f);
    expect(frames.filter((f) => f.message_type === 'assistant_message')).toEqual([
      expect.objectContaining({ content: 'You said: again' }),
    ]);
    expect(fake.requests).toHaveLength(0);

    // the agent's model is untouched: the next request without an override goes to it
    expect((await client.agents.retrieve(agentId)).llm_config).toEqual(before.llm_config);
    fake.push({ content: 'from the agent model' });
    const plain = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'and now?' }],
    });
    expect(plain.messages.map((m: any) => m.content)).toEqual(['from the agent model']);
    expect(fake.requests).toHaveLength(1);

    // a handle no provider serves: refused before anything is stored
    const runsBefore = (await client.runs.list({ agent_id: agentId })).getPaginatedItems().length;
    await expect(
      client.agents.messages.create(agentId, {
        messages: [{ role: 'user', content: 'x' }],
        override_model: 'nowhere/model',
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: { details: { problems: [expect.objectContaining({ path: 'override_model' })] } },
    });
    expect((await client.runs.list({ agent_id: agentId })).getPaginatedItems()).toHaveLength(
      runsBefore,
    );
  });

  /**
   * Waits for the next millisecond of the server's clock (the app runs in this process): a row made after
   * it has a later `created_at` than every row made before, so "newest first" has one answer.
   */
  const nextMillisecond = () => {
    const now = Date.now();
    while (Date.now() <= now);
  };

  it("an agent's tools, its blocks and the tools list without an order are newest first (Letta's order default desc)", async () => {
    const declare = async (name: string) =>
      (await client.tools.create({
        name,
        description: `tool ${name}`,
        parameters: { type: 'object', properties: {} },
        safety: 'read_only',
        kind: 'http',
        http: { url: `${env.tools.baseUrl}/tool/${name}`, method: 'POST' },
      } as any)) as any;
    // made in the order older, newer; named so that their names sort the other way
    const older = await declare('zz_order_older');
    nextMillisecond();
    const newer = await declare('aa_order_newer');

    // attached in the other order: the list follows when each tool was made, not when it was attached
    const agent = await client.agents.create({
      model: 'scripted/default',
      tool_ids: [newer.id, older.id],
      memory_blocks: [
        { label: 'first', value: '1' },
        { label: 'second', value: '2' },
      ],
    });
    const toolIds = (await client.agents.tools.list(agent.id)).getPaginatedItems().map((x) => x.id);
    // Letta's built-in tools were made before any of the tenant's: they come last
    expect(toolIds.slice(0, 2)).toEqual([newer.id, older.id]);
    expect(toolIds).toHaveLength(agent.tools.length);
    const asc = (await client.agents.tools.list(agent.id, { order: 'asc' }))
      .getPaginatedItems()
      .map((x) => x.id);
    expect(asc).toEqual([...toolIds].reverse());
    // the SDK's auto-pagination (after = the last id of each page) walks the same order
    const paged: string[] = [];
    for await (const x of client.agents.tools.list(agent.id, { limit: 2 })) paged.push(x.id);
    expect(paged).toEqual(toolIds);

    const listed = (await client.tools.list({ names: [older.name, newer.name] }))
      .getPaginatedItems()
      .map((x) => x.id);
    expect(listed).toEqual([newer.id, older.id]);
    const all = (await client.tools.list()).getPaginatedItems();
    expect(all[0].id).toBe(newer.id);
    expect(all.at(-1)!.tool_type).not.toBe('custom'); // a built-in

    // blocks: a block made before the agent, attached after its own two
    const shared = await client.blocks.create({ label: 'shared', value: 's' });
    nextMillisecond();
    const withShared = await client.agents.create({
      model: 'scripted/default',
      memory_blocks: [
        { label: 'first', value: '1' },
        { label: 'second', value: '2' },
      ],
      block_ids: [shared.id],
    });
    const labels = async (q?: any) =>
      (await client.agents.blocks.list(withShared.id, q)).getPaginatedItems().map((b) => b.label);
    expect(await labels()).toEqual(['second', 'first', 'shared']);
    expect(await labels({ order: 'asc' })).toEqual(['shared', 'first', 'second']);
    const pagedBlocks: string[] = [];
    for await (const b of client.agents.blocks.list(withShared.id, { limit: 1 }))
      pagedBlocks.push(b.label!);
    expect(pagedBlocks).toEqual(['second', 'first', 'shared']);
  });

  it("an agent created without a name gets a name as Letta's (an adjective and a noun, capitalised)", async () => {
    const names = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const agent = await client.agents.create({ model: 'scripted/default' });
      expect(agent.name).toMatch(/^[A-Z][a-z]+[A-Z][a-z]+$/);
      names.add(agent.name);
    }
    expect(names.size).toBeGreaterThan(1); // drawn at random, as Letta's create_random_username
    // a name given is kept
    expect((await client.agents.create({ model: 'scripted/default', name: 'mine' })).name).toBe(
      'mine',
    );
  });

  it("a run answers Letta's ttft_ns (its start to its first model answer, by the app's clock) and total_duration_ns, streamed or not", async () => {
    const clock = fakeClock(t);
    try {
      // conversation_search goes on (Letta's continue_loop rule): two model calls, each "taking" its time
      const agentId = await createAgent(t, fake);
      const { sent, streamed } = await searchThenAnswer(agentId, () => {
        let i = 0;
        fake.respond(() => {
          const [ms, call] = i++ === 0 ? [1500, SEARCH] : [2500, ANSWER];
          clock.advance(ms);
          return { tool_calls: [call] };
        });
      });

      const timing = { ttft_ns: 1500 * 1e6, total_duration_ns: 4000 * 1e6 };
      expect(await client.runs.retrieve(sent.run_id)).toMatchObject(timing);
      expect(await client.runs.retrieve(streamed)).toMatchObject(timing);
      const listed = (await client.runs.list({ agent_id: agentId })).getPaginatedItems();
      expect(listed.map((r) => [r.ttft_ns, r.total_duration_ns])).toEqual([
        [timing.ttft_ns, timing.total_duration_ns],
        [timing.ttft_ns, timing.total_duration_ns],
      ]);

      // a model call that failed brought no token: null, the duration still answered
      fake.respond(() => {
        clock.advance(700);
        return { status: 400 };
      });
      const failed = await client.agents.messages.createAsync(agentId, {
        messages: [{ role: 'user', content: 'tea once more?' }],
      });
      expect(await runEnded(t, failed.id)).toMatchObject({
        stop_reason: 'llm_api_error',
        ttft_ns: null,
        total_duration_ns: 700 * 1e6,
      });
    } finally {
      clock.restore();
    }
  });

  it("the endpoint's cached and reasoning tokens are answered per step, in the response's usage and the run's, streamed or not", async () => {
    const agentId = await createAgent(t, fake);
    const { sent, streamed, frames } = await searchThenAnswer(agentId, () =>
      fake.push(
        // reported none cached, nothing of reasoning
        {
          tool_calls: [SEARCH],
          usage: { prompt_tokens: 90, prompt_tokens_details: { cached_tokens: 0 } },
        },
        {
          tool_calls: [ANSWER],
          usage: {
            prompt_tokens: 120,
            prompt_tokens_details: { cached_tokens: 48, audio_tokens: 0 },
            completion_tokens_details: { reasoning_tokens: 12 },
          },
        },
      ),
    );
    // token streaming: the model's answer streamed too, its usage in its last chunk
    expect(fake.requests.map((r) => r.stream)).toEqual([false, false, true, true]);

    const usage = { cached_input_tokens: 48, cache_write_tokens: null, reasoning_tokens: 12 };
    expect(sent.usage).toMatchObject({ ...usage, step_count: 2 });
    expect(frames.find((f) => f.message_type === 'usage_statistics')).toMatchObject(usage);
    for (const runId of [sent.run_id, streamed]) {
      const steps = (await client.runs.steps.list(runId, { order: 'asc' })).getPaginatedItems();
      expect(steps.map((st) => st.id)).toHaveLength(2);
      const [first, second] = await Promise.all(steps.map((st) => client.steps.retrieve(st.id)));
      // Letta's: the details as reported; the flat counts only above 0
      expect(first).toMatchObject({
        prompt_tokens: 90,
        cached_input_tokens: null,
        cache_write_tokens: null,
        reasoning_tokens: null,
        prompt_tokens_details: {
          cached_tokens: 0,
          cache_read_tokens: 0,
          cache_creation_tokens: null,
        },
        completion_tokens_details: null,
      });
      expect(second).toMatchObject({
        prompt_tokens: 120,
        cached_input_tokens: 48,
        cache_write_tokens: null,
        reasoning_tokens: 12,
        prompt_tokens_details: {
          cached_tokens: 48,
          cache_read_tokens: 48,
          cache_creation_tokens: null,
        },
        completion_tokens_details: { reasoning_tokens: 12 },
      });
      expect(await client.runs.usage.retrieve(runId)).toMatchObject({
        prompt_tokens: 210,
        prompt_tokens_details: { cached_tokens: 48 },
        completion_tokens_details: { reasoning_tokens: 12 },
      });
    }
  });

  it("Letta's optional fields of a run, a step, a block, a tool and an agent's memory are answered", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'hello back' });
    const res: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
      use_assistant_message: false,
      include_return_message_types: ['assistant_message', 'reasoning_message'],
    });
    const run = await client.runs.retrieve(res.run_id);
    expect(run).toMatchObject({
      base_template_id: null,
      request_config: {
        use_assistant_message: false,
        assistant_message_tool_name: 'send_message',
        assistant_message_tool_kwarg: 'message',
        include_return_message_types: ['assistant_message', 'reasoning_message'],
      },
    });
    fake.push({ content: 'again' });
    const plain: any = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect((await client.runs.retrieve(plain.run_id)).request_config).toMatchObject({
      use_assistant_message: true,
      include_return_message_types: null,
    });

    const [step] = (await client.runs.steps.list(res.run_id)).getPaginatedItems();
    const agent = await client.agents.retrieve(agentId);
    expect(await client.steps.retrieve(step.id)).toMatchObject({
      model: 'fake',
      model_handle: agent.model,
      model_endpoint: fake.baseUrl,
      context_window_limit: 8000,
      provider_name: agent.model!.split('/')[0],
      provider_category: null,
      provider_id: null,
      origin: null,
      project_id: null,
      cached_input_tokens: null,
      cache_write_tokens: null,
      reasoning_tokens: null,
      completion_tokens_details: null,
      prompt_tokens_details: null,
      tid: null,
      trace_id: null,
      request_id: null,
      error_type: null,
      error_data: null,
      messages: [],
    });

    const block = await client.blocks.create({ label: 'fields', value: 'x' });
    expect(block).toMatchObject({
      project_id: null,
      template_name: null,
      template_id: null,
      base_template_id: null,
      deployment_id: null,
      entity_id: null,
      preserve_on_migration: false,
      hidden: null,
      created_by_id: null,
      last_updated_by_id: null,
    });

    const tool: any = await client.tools.create({
      name: 'fields_tool',
      description: 'reads',
      parameters: { type: 'object', properties: {} },
      safety: 'read_only',
      kind: 'http',
      http: { url: `${env.tools.baseUrl}/tool/fields_tool`, method: 'POST' },
    } as any);
    expect(tool).toMatchObject({
      source_code: null,
      pip_requirements: null,
      npm_requirements: null,
      metadata_: {},
      project_id: null,
      created_by_id: null,
      last_updated_by_id: null,
      // read_only tools of one turn run together here
      enable_parallel_execution: true,
    });
    const writes: any = await client.tools.create({
      name: 'fields_write',
      description: 'writes',
      parameters: { type: 'object', properties: {} },
      safety: 'side_effecting',
      kind: 'http',
      http: { url: `${env.tools.baseUrl}/tool/fields_write`, method: 'POST' },
    } as any);
    expect(writes.enable_parallel_execution).toBe(false);

    expect(agent.memory).toMatchObject({
      agent_type: agent.agent_type,
      git_enabled: false,
      file_blocks: [],
    });
  });

  it("cancel with nothing running answers an empty object, as Letta's wire reference gives it (agent and conversation)", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    expect(await client.agents.messages.cancel(agentId)).toEqual({});
    expect(await client.agents.messages.cancel(agentId, { run_ids: [] })).toEqual({});
    const conv = await client.conversations.create({ agent_id: agentId });
    expect(await client.conversations.cancel(conv.id)).toEqual({});
    // named runs are answered one by one (an unknown one `failed`)
    expect(
      await client.agents.messages.cancel(agentId, {
        run_ids: ['run-00000000-0000-4000-8000-000000000000'],
      }),
    ).toEqual({ 'run-00000000-0000-4000-8000-000000000000': 'failed' });
  });

  it("streaming options without streaming: true are refused (400 VALIDATION_FAILED, Letta's 422), nothing stored", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const refused = async (extra: Record<string, unknown>, path: string) =>
      expect(
        client.agents.messages.create(agentId, {
          messages: [{ role: 'user', content: 'hi' }],
          ...extra,
        } as any),
      ).rejects.toMatchObject({
        status: 400,
        error: {
          code: 'VALIDATION_FAILED',
          details: { problems: [expect.objectContaining({ path })] },
        },
      });
    await refused({ stream_tokens: true }, 'stream_tokens');
    await refused({ include_pings: false }, 'include_pings');
    await refused({ background: true }, 'background');
    await refused({ streaming: false, stream_tokens: true }, 'stream_tokens');
    expect((await client.runs.list({ agent_id: agentId })).getPaginatedItems()).toEqual([]);
    expect(fake.requests).toHaveLength(0);

    // their defaults are accepted without streaming, and the options with it
    fake.push({ content: 'plain' }, { content: 'streamed' });
    const plain = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
      stream_tokens: false,
      include_pings: true,
      background: false,
    });
    expect(plain.stop_reason.stop_reason).toBe('end_turn');
    const frames: any[] = [];
    for await (const f of (await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'hi' }],
      streaming: true,
      stream_tokens: true,
      include_pings: false,
    })) as AsyncIterable<any>)
      frames.push(f);
    expect(frames.at(-1)).toMatchObject({ message_type: 'usage_statistics' });
    // a conversation's JSON answer (raw HTTP: the SDK always streams there) reads past them, as
    // Letta's conversation route does
    const conv = await client.conversations.create({ agent_id: agentId });
    fake.push({ content: 'in the conversation' });
    const inConv = await api(t, 'POST', `/v1/conversations/${conv.id}/messages`, {
      messages: [{ role: 'user', content: 'hi' }],
      streaming: false,
      stream_tokens: true,
    });
    expect([inConv.status, inConv.body.stop_reason]).toEqual([
      200,
      { message_type: 'stop_reason', stop_reason: 'end_turn' },
    ]);
  });

  it("Letta's user and file fields of a conversation, an archive and a passage are answered (null: no users or files here)", async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const users = { created_by_id: null, last_updated_by_id: null };
    expect(await client.conversations.create({ agent_id: agentId })).toMatchObject(users);
    const archive = await client.archives.create({ name: 'fields-archive' });
    expect(archive).toMatchObject(users);
    const [passage] = await client.agents.passages.create(agentId, { text: 'remember this' });
    expect(passage).toMatchObject({ ...users, file_id: null, file_name: null });
  });
});
