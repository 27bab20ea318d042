/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta, { toFile } from '@letta-ai/letta-client';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { createAgent, LoopEnv, startLoopEnv } from '../support/processing-fixtures';

/**
 * A walk over Letta's SDK resources (@letta-ai/letta-client 1.12, unmodified) against the server: one
 * call per step, its answer checked against the shape the SDK's types declare.
 */
describe('clients: the Letta SDK walk', () => {
  let env: LoopEnv;
  let t: TestApp;
  let fake: FakeModelServer;
  let client: Letta;

  beforeAll(async () => {
    // the offline embedding model, so the walk covers Letta's embedding fields (no default: other steps
    // search by full text)
    env = await startLoopEnv([], {
      overrides: {
        models: {
          embeddings: {
            providers: [
              { name: 'local', type: 'hashed', models: [{ name: 'bow', dimensions: 256 }] },
            ],
          },
        },
      },
    });
    ({ t, fake } = env);
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
  });
  afterAll(() => env.close());
  beforeEach(() => env.reset());

  const collect = async (stream: AsyncIterable<any>) => {
    const out: any[] = [];
    for await (const c of stream) out.push(c);
    return out;
  };

  it('models: list and embedding models', async () => {
    const models: Letta.Models.Model[] = await client.models.list();
    expect(models[0]).toMatchObject({
      handle: expect.any(String),
      name: expect.any(String),
      model: expect.any(String),
      model_endpoint_type: expect.any(String),
      provider_type: expect.any(String),
      context_window: expect.any(Number),
      max_context_window: expect.any(Number),
    });
    const embeddings: Letta.Models.EmbeddingModel[] = await client.models.embeddings.list();
    expect(embeddings).toEqual([
      expect.objectContaining({
        handle: 'local/bow',
        name: 'bow',
        display_name: 'bow',
        provider_name: 'local',
        provider_type: 'letta',
        embedding_model: 'bow',
        embedding_dim: 256,
      }),
    ]);
  });

  it('archival memory by vector: an agent and an archive with an embedding model', async () => {
    const agent = await client.agents.create({
      name: 'with-embedding',
      model: 'scripted/default',
      embedding: 'local/bow',
    });
    expect(agent.embedding_config).toMatchObject({ handle: 'local/bow', embedding_dim: 256 });
    const [p] = await client.agents.passages.create(agent.id, { text: 'green tea in the morning' });
    expect(p.embedding).toHaveLength(256);
    expect(p.embedding_config).toMatchObject({ handle: 'local/bow' });
    await client.agents.passages.create(agent.id, { text: 'black coffee at night' });
    const found = await client.agents.passages.search(agent.id, { query: 'tea', top_k: 1 });
    expect(found.results.map((r) => r.content)).toEqual(['green tea in the morning']);

    const archive = await client.archives.create({ name: 'vectors', embedding: 'local/bow' });
    expect(archive.embedding_config).toMatchObject({ handle: 'local/bow' });
    await client.archives.passages.createMany(archive.id, {
      passages: [{ text: 'red kites circle' }, { text: 'blue whales sing' }],
    });
    const ranked = await client.passages.search({ query: 'whales', archive_id: archive.id });
    expect(ranked[0]).toMatchObject({ passage: { text: 'blue whales sing' } });
    expect(ranked[0].score).toBeGreaterThan(ranked[1].score);
  });

  it('agents: a model handle with model_settings and context_window_limit honoured', async () => {
    const agent: any = await client.agents.create({
      name: 'with-settings',
      model: 'scripted/default',
      model_settings: { provider_type: 'openai', temperature: 0.2, max_output_tokens: 300 } as any,
      context_window_limit: 16000,
    });
    // every field the SDK's AgentState marks required
    for (const k of [
      'id',
      'agent_type',
      'blocks',
      'llm_config',
      'memory',
      'name',
      'sources',
      'system',
      'tags',
      'tools',
    ])
      expect(agent).toHaveProperty(k);
    expect(agent.llm_config).toMatchObject({
      model: 'default',
      context_window: 16000,
      temperature: 0.2,
      max_tokens: 300,
    });
    const found = (await client.agents.list({ query_text: 'WITH-SETT' })).getPaginatedItems();
    expect(found.map((a) => a.id)).toEqual([agent.id]);
    const updated: any = await client.agents.update(agent.id, { context_window_limit: 12000 });
    expect(updated.llm_config.context_window).toBe(12000);
    await expect(
      client.agents.update(agent.id, {
        model_settings: { reasoning: { reasoning_effort: 'high' } } as any,
      }),
    ).rejects.toMatchObject({ status: 400 });
  });

  it("agents: agent_type letta_v1_agent (Letta's default): v1 base tools, the loop runs on after a tool call", async () => {
    const agent = await client.agents.create({
      name: 'v1-agent',
      agent_type: 'letta_v1_agent',
      model: 'openai/fake',
      memory_blocks: [{ label: 'human', value: 'Name: Ann' }],
    });
    expect(agent.agent_type).toBe('letta_v1_agent');
    expect(agent.tools.map((x) => x.name)).toEqual([
      'memory_replace',
      'memory_insert',
      'conversation_search',
    ]);
    fake.push(
      {
        tool_calls: [
          { name: 'memory_insert', arguments: { label: 'human', new_string: 'Likes tea' } },
        ],
      },
      { content: 'noted' },
    );
    const res = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    expect(res.messages.map((m) => m.message_type)).toEqual([
      'tool_call_message',
      'tool_return_message',
      'assistant_message',
    ]);
    expect((res.messages[2] as any).content).toBe('noted');
    expect(res.stop_reason.stop_reason).toBe('end_turn');
    const human = await client.agents.blocks.retrieve('human', { agent_id: agent.id });
    expect(human.value).toBe('Name: Ann\nLikes tea');
    expect((await client.agents.retrieve(agent.id)).agent_type).toBe('letta_v1_agent');
  });

  it('conversations: create, retrieve, update, list, messages, fork, cancel, compact, delete', async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const conv: Letta.Conversations.Conversation = await client.conversations.create({
      agent_id: agentId,
    });
    expect(conv).toMatchObject({ id: expect.stringMatching(/^conv-/), agent_id: agentId });
    expect(await client.conversations.retrieve(conv.id)).toMatchObject({ id: conv.id });
    expect(await client.conversations.update(conv.id, { summary: 'about cats' })).toMatchObject({
      summary: 'about cats',
    });
    // as Letta's update (it sets only the fields given not null), null keeps the summary
    expect(
      await client.conversations.update(conv.id, {
        summary: null,
        description: null,
        archived: null,
      }),
    ).toMatchObject({ summary: 'about cats', archived: false });
    expect((await client.conversations.list({ agent_id: agentId })).map((c) => c.id)).toEqual([
      conv.id,
    ]);
    const other = await client.conversations.create({ agent_id: agentId });
    const bySummary = await client.conversations.list({
      agent_id: agentId,
      summary_search: 'CATS',
    });
    expect(bySummary.map((c) => c.id)).toEqual([conv.id]);
    await client.conversations.delete(other.id);

    fake.push({ content: 'in the conversation' }, { content: 'in the default one' });
    const frames = await collect(
      await client.conversations.messages.create(conv.id, {
        messages: [{ role: 'user', content: 'hi' }],
      }),
    );
    expect(frames.map((f) => f.message_type)).toEqual([
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    // Letta's in_context_message_ids: the conversation's messages in context, oldest first
    const history = (await client.conversations.messages.list(conv.id, { order: 'asc' }))
      .getPaginatedItems()
      .map((m: any) => m.id);
    const retrieved = await client.conversations.retrieve(conv.id);
    expect(retrieved.in_context_message_ids).toEqual(history);
    expect(history).toHaveLength(2);
    // the conversation's newest run, resumed
    const replay = await collect(await client.conversations.messages.stream(conv.id, {}));
    expect(replay.map((f) => f.message_type)).toEqual([
      'assistant_message',
      'stop_reason',
      'usage_statistics',
    ]);
    await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'elsewhere' }],
    });
    // separate histories: the model saw only its own conversation's messages
    expect(JSON.stringify(fake.requests[1].messages)).not.toContain('in the conversation');
    const inConv = (
      await client.conversations.messages.list(conv.id, { order: 'asc' })
    ).getPaginatedItems();
    expect(inConv.map((m: any) => m.content)).toEqual(['hi', 'in the conversation']);
    const inDefault = (
      await client.conversations.messages.list('default', {
        agent_id: agentId,
        order: 'asc',
      })
    ).getPaginatedItems();
    expect(inDefault.map((m: any) => m.content)).toEqual(['elsewhere', 'in the default one']);
    // Letta Code pages back through a conversation with order=desc and before=<the oldest id it has>
    const lettaCodePage = async (before?: string) =>
      (
        await client.conversations.messages.list('default', {
          agent_id: agentId,
          order: 'desc',
          limit: 1,
          ...(before ? { before } : {}),
        })
      ).getPaginatedItems() as any[];
    const newest = await lettaCodePage();
    expect(newest.map((m) => m.content)).toEqual(['in the default one']);
    const older = await lettaCodePage(newest[0].id);
    expect(older.map((m) => m.content)).toEqual(['elsewhere']);
    expect(await lettaCodePage(older[0].id)).toEqual([]);
    // Letta's message_ids on a retrieved agent: its default conversation's messages in context
    expect((await client.agents.retrieve(agentId)).message_ids).toEqual(
      inDefault.map((m: any) => m.id),
    );

    // fork: a new conversation sharing the source's in-context messages (by reference: the same ids)
    const fork: Letta.Conversations.Conversation = await client.conversations.fork(conv.id);
    expect(fork).toMatchObject({ id: expect.stringMatching(/^conv-/), agent_id: agentId });
    const inFork = (
      await client.conversations.messages.list(fork.id, { order: 'asc' })
    ).getPaginatedItems();
    expect(inFork.map((m) => m.id)).toEqual(inConv.map((m) => m.id));
    const cut = await client.conversations.fork('default', {
      agent_id: agentId,
      message_id: inDefault[0].id,
      hidden: true,
    });
    const inCut = (
      await client.conversations.messages.list(cut.id, { order: 'asc' })
    ).getPaginatedItems();
    expect(inCut.map((m: any) => m.content)).toEqual(['elsewhere']);
    const listed = (await client.conversations.list({ agent_id: agentId })).map((c) => c.id);
    expect(listed.sort()).toEqual([conv.id, fork.id].sort());

    expect(await client.conversations.cancel(conv.id)).toEqual({});
    fake.push({ content: 'they said hi' });
    expect(
      await client.conversations.messages.compact(conv.id, {
        compaction_settings: { mode: 'all' },
      }),
    ).toEqual({ summary: 'they said hi', num_messages_before: 3, num_messages_after: 2 });
    await client.conversations.delete(conv.id);
    await expect(client.conversations.retrieve(conv.id)).rejects.toMatchObject({ status: 404 });
  });

  it('agents.messages: compact (summarize) and reset', async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'a1' }, { content: 'a2' }, { content: 'they asked q1' });
    for (const q of ['q1', 'q2'])
      await client.agents.messages.create(agentId, { messages: [{ role: 'user', content: q }] });
    const compacted: Letta.Conversations.CompactionResponse =
      await client.agents.messages.compact(agentId);
    expect(compacted).toEqual({
      summary: 'they asked q1',
      num_messages_before: 5,
      num_messages_after: 4,
    });
    const reset = await client.agents.messages.reset(agentId, {
      add_default_initial_messages: false,
    });
    expect(reset).toMatchObject({ id: agentId, tools: [] });
  });

  it('agents.recompile and conversations.recompile: the compiled system prompt', async () => {
    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      memory_blocks: [{ label: 'human', value: 'likes tea' }],
    });
    const prompt: string = await client.agents.recompile(agentId);
    expect(prompt).toContain('You are a test agent.');
    expect(prompt).toContain('likes tea');
    const conv = await client.conversations.create({ agent_id: agentId });
    expect(await client.conversations.recompile(conv.id)).toBe(prompt);
    await expect(
      client.agents.recompile('agent-00000000-0000-4000-8000-000000000000'),
    ).rejects.toMatchObject({ status: 404 });
  });

  it('agents.messages.create with an image content part (a vision model)', async () => {
    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      llm_config: {
        model: 'gpt-4o-mini',
        model_endpoint_type: 'openai',
        model_endpoint: fake.baseUrl,
        context_window: 8000,
      },
    });
    const png =
      'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
    fake.push({ content: 'one pixel' });
    const res = await client.agents.messages.create(agentId, {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'what is it?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png } },
          ],
        },
      ],
    });
    expect(res.messages.map((m: any) => m.content)).toEqual(['one pixel']);
    expect(JSON.stringify(fake.requests.at(-1)!.messages)).toContain('data:image/png;base64,');
  });

  it('agents: exportFile and importFile (.af)', async () => {
    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      memory_blocks: [{ label: 'persona', value: 'exported' }],
    });
    const file = (await client.agents.exportFile(agentId)) as unknown as Record<string, any>;
    expect(file.agents[0]).toMatchObject({ id: 'agent-0', block_ids: ['block-0'] });
    const imported: Letta.Agents.AgentImportFileResponse = await client.agents.importFile({
      file: await toFile(Buffer.from(JSON.stringify(file)), 'agent.af'),
      name: 'imported-by-sdk',
    });
    expect(imported.agent_ids).toHaveLength(1);
    expect(await client.agents.retrieve(imported.agent_ids[0])).toMatchObject({
      name: 'imported-by-sdk',
      memory: { blocks: [expect.objectContaining({ label: 'persona', value: 'exported' })] },
    });
    // a file of two agents sharing the block (as Letta writes a group's agents): both ids answered
    const pair = {
      ...file,
      agents: [file.agents[0], { ...file.agents[0], id: 'agent-1', name: 'second' }],
      groups: [{ id: 'group-0', agent_ids: ['agent-0', 'agent-1'] }],
    };
    const both = await client.agents.importFile({
      file: await toFile(Buffer.from(JSON.stringify(pair)), 'pair.af'),
    });
    expect(both.agent_ids).toHaveLength(2);
    const [one, two] = await Promise.all(both.agent_ids.map((id) => client.agents.retrieve(id)));
    expect(one.memory.blocks[0].id).toBe(two.memory.blocks[0].id);
  });

  it('a resumed token stream continues after the last chunk seen: no text twice (as Letta Code resumes)', async () => {
    const agent = await client.agents.create({
      name: 'resumer',
      agent_type: 'letta_v1_agent',
      model: 'openai/fake',
    });
    const text = 'one two three four five six';
    const byId = new Map<string, string>();
    const add = (f: any) => {
      if (f.message_type === 'assistant_message')
        byId.set(f.id, (byId.get(f.id) ?? '') + String(f.content));
    };
    for (const stopAt of [1, 2]) {
      byId.clear();
      fake.push({ content: text });
      const stream = await client.agents.messages.create(agent.id, {
        messages: [{ role: 'user', content: 'count' }],
        streaming: true,
        stream_tokens: true,
        background: true,
      });
      let runId = '';
      let lastSeqId: number | null = null;
      let chunks = 0;
      for await (const f of stream as AsyncIterable<any>) {
        runId = f.run_id ?? runId;
        if (f.seq_id != null) lastSeqId = f.seq_id;
        add(f);
        if (f.message_type === 'assistant_message' && ++chunks === stopAt) break;
      }
      expect(lastSeqId).toEqual(expect.any(Number)); // chunks carry a seq_id, as Letta's frames
      const resumed = await client.runs.messages.stream(runId, { starting_after: lastSeqId ?? 0 });
      for await (const f of resumed as AsyncIterable<any>) add(f);
      expect([...byId.values()]).toEqual([text]);
    }
  });

  it('auto-pagination ends on every list the SDK pages, one item a page, both orders', async () => {
    const agent = await client.agents.create({
      name: 'pager',
      agent_type: 'letta_v1_agent',
      model: 'openai/fake',
      memory_blocks: [
        { label: 'human', value: 'Ann' },
        { label: 'persona', value: 'helpful' },
      ],
    });
    const other = await createAgent(t, fake, { include_base_tools: false });
    const shared = await client.blocks.create({ label: 'pager-shared', value: 'v' });
    await client.agents.blocks.attach(shared.id, { agent_id: agent.id });
    await client.agents.blocks.attach(shared.id, { agent_id: other });
    fake.push(
      { tool_calls: [{ name: 'memory_insert', arguments: { label: 'human', new_string: 'tea' } }] },
      { content: 'noted' },
    );
    const res = await client.agents.messages.create(agent.id, {
      messages: [{ role: 'user', content: 'I like tea' }],
    });
    const runId = (res as any).run_id as string;
    const stepId = (await client.runs.steps.list(runId, { order: 'asc' })).getPaginatedItems()[0]
      .id;
    const lists: [string, (q: Record<string, unknown>) => any][] = [
      ['tools', (q) => client.tools.list(q)],
      ['agents.tools', (q) => client.agents.tools.list(agent.id, q)],
      ['agents.blocks', (q) => client.agents.blocks.list(agent.id, q)],
      ['blocks.agents', (q) => client.blocks.agents.list(shared.id, q)],
      ['runs.messages', (q) => client.runs.messages.list(runId, q)],
      ['runs.steps', (q) => client.runs.steps.list(runId, q)],
      ['steps.messages', (q) => client.steps.messages.list(stepId, q)],
    ];
    for (const [name, list] of lists) {
      // oldest first (some lists are newest first without an order, as Letta's)
      const whole = ((await list({ order: 'asc' })).getPaginatedItems() as { id: string }[]).map(
        (x) => x.id,
      );
      expect({ name, n: whole.length > 1 }).toEqual({ name, n: true });
      for (const order of ['asc', 'desc'] as const) {
        const seen: string[] = [];
        for await (const x of list({ limit: 1, order }) as AsyncIterable<{ id: string }>) {
          seen.push(x.id);
          if (seen.length > whole.length) break; // a list that never ends fails below, not by timeout
        }
        expect({ name, order, seen }).toEqual({
          name,
          order,
          seen: order === 'asc' ? whole : [...whole].reverse(),
        });
      }
    }
    await expect(client.runs.steps.list(runId, { after: 'step-none' })).rejects.toMatchObject({
      status: 400,
      error: { code: 'UNKNOWN_CURSOR' },
    });
  });

  it("filters: runs by agent_ids, stop_reason, conversation_id, ascending; history by conversation_id; a message's otid", async () => {
    const a = await createAgent(t, fake, { include_base_tools: false });
    const b = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'one' }, { content: 'two' }, { content: 'three' });
    const ra = await client.agents.messages.create(a, {
      messages: [{ role: 'user', content: 'hi', otid: 'otid-from-the-client' } as any],
    });
    const rb = await client.agents.messages.create(b, {
      messages: [{ role: 'user', content: 'hi' }],
    });
    const conv = await client.conversations.create({ agent_id: a });
    const rc = await client.conversations.messages.create(conv.id, {
      messages: [{ role: 'user', content: 'in it' }],
    } as any);
    const ids = async (q: Record<string, unknown>) =>
      (await client.runs.list(q as any)).getPaginatedItems().map((r) => r.id);
    const runA = (ra as any).run_id as string;
    const runB = (rb as any).run_id as string;
    const runC = await (async () => {
      for await (const chunk of rc as any) if (chunk.run_id) return chunk.run_id as string;
      return (await ids({ conversation_id: conv.id }))[0];
    })();
    expect(new Set(await ids({ agent_ids: [a, b] }))).toEqual(new Set([runA, runB, runC]));
    expect(await ids({ agent_id: a, conversation_id: conv.id })).toEqual([runC]);
    expect(await ids({ agent_id: a, conversation_id: 'default' })).toEqual([runA]);
    expect(await ids({ agent_ids: [a, b], stop_reason: 'max_steps' })).toEqual([]);
    expect((await ids({ agent_id: a, ascending: true }))[0]).toBe(runA);
    expect((await ids({ agent_id: a, ascending: false }))[0]).toBe(runC);
    const history = (
      await client.agents.messages.list(a, { conversation_id: conv.id })
    ).getPaginatedItems();
    expect(history.map((m: any) => m.content)).toEqual(['three', 'in it']);
    const own = (await client.agents.messages.list(a)).getPaginatedItems() as any[];
    expect(own.find((m) => m.message_type === 'user_message').otid).toBe('otid-from-the-client');
    const fresh = await createAgent(t, fake, { include_base_tools: false });
    const agentIds = async (q: Record<string, unknown>) =>
      (await client.agents.list({ limit: 100, ...q } as any)).getPaginatedItems().map((x) => x.id);
    const ended = await agentIds({ last_stop_reason: 'end_turn' });
    expect(ended).toEqual(expect.arrayContaining([a, b]));
    expect(ended).not.toContain(fresh);
    expect(await agentIds({ project_id: 'project-1' })).toEqual([]);
  });

  it('a send retried with the same otids (a lost answer) is answered by its run, never processed twice', async () => {
    const a = await createAgent(t, fake, { include_base_tools: false });
    fake.push({ content: 'once' });
    const send = { messages: [{ role: 'user', content: 'hi', otid: 'otid-retry-1' } as any] };
    const first: any = await client.agents.messages.create(a, send);
    const again: any = await client.agents.messages.create(a, send);
    expect(again.run_id).toBe(first.run_id);
    expect(again.messages.map((m: any) => m.content)).toEqual(['once']);
    // a background stream retried: the stored run's stream again, from its start
    fake.push({ content: 'streamed once' });
    const streamed = { ...send, messages: [{ ...send.messages[0], otid: 'otid-retry-2' }] };
    const frames = await collect(await client.agents.messages.stream(a, streamed));
    const replay = await collect(await client.agents.messages.stream(a, streamed));
    const text = (fs: any[]) => fs.filter((f) => f.message_type === 'assistant_message');
    expect(text(replay).map((f) => [f.id, f.content])).toEqual(
      text(frames).map((f) => [f.id, f.content]),
    );
    // async too: the same run
    const run1 = await client.agents.messages.createAsync(a, {
      messages: [{ role: 'user', content: 'later', otid: 'otid-retry-3' } as any],
    });
    const run2 = await client.agents.messages.createAsync(a, {
      messages: [{ role: 'user', content: 'later', otid: 'otid-retry-3' } as any],
    });
    expect(run2.id).toBe(run1.id);
    // two copies at the same moment: one run (the runs' request key is unique)
    const copy = { messages: [{ role: 'user', content: 'twice', otid: 'otid-retry-4' } as any] };
    const [c1, c2] = await Promise.all([
      client.agents.messages.createAsync(a, copy),
      client.agents.messages.createAsync(a, copy),
    ]);
    expect(c2.id).toBe(c1.id);
    for (const id of [run1.id, c1.id])
      while (!['completed', 'failed'].includes((await client.runs.retrieve(id)).status ?? ''))
        await new Promise((r) => setTimeout(r, 20));
    const history = (await client.agents.messages.list(a, { limit: 50 })).getPaginatedItems();
    expect(history.filter((m: any) => m.message_type === 'user_message')).toHaveLength(4);
    expect(fake.requests).toHaveLength(4);
  });

  it('runs, steps, messages, tags', async () => {
    const agentId = await createAgent(t, fake, {
      include_base_tools: false,
      tags: ['sdk-walk', 'blue'],
    });
    fake.push({
      content: 'the walk answer',
      usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 },
    });
    const res = await client.agents.messages.create(agentId, {
      messages: [{ role: 'user', content: 'walk' }],
    });
    const runId = (res as any).run_id as string;
    expect(await client.runs.retrieve(runId)).toMatchObject({
      id: runId,
      agent_id: agentId,
      status: 'completed',
    });
    expect(await client.runs.usage.retrieve(runId)).toMatchObject({
      prompt_tokens: 11,
      completion_tokens: 4,
      total_tokens: 15,
    });
    const runs = (await client.runs.list({ agent_id: agentId })).getPaginatedItems();
    expect(runs.map((r) => r.id)).toEqual([runId]);
    const runMessages = (await client.runs.messages.list(runId)).getPaginatedItems();
    expect(runMessages.map((m: any) => m.message_type)).toEqual([
      'user_message',
      'assistant_message',
    ]);

    const steps = (await client.steps.list({ agent_id: agentId })).getPaginatedItems();
    expect(steps).toHaveLength(1);
    expect(await client.steps.retrieve(steps[0].id)).toMatchObject({
      id: steps[0].id,
      run_id: runId,
    });
    const stepMessages = (await client.steps.messages.list(steps[0].id)).getPaginatedItems();
    expect(stepMessages.map((m: any) => [m.message_type, m.content])).toEqual([
      ['assistant_message', 'the walk answer'],
    ]);
    const rated: Letta.Steps.Step = await client.steps.feedback.create(steps[0].id, {
      feedback: 'positive',
      tags: ['helpful'],
    });
    expect(rated).toMatchObject({ id: steps[0].id, feedback: 'positive', tags: ['helpful'] });
    const rows = await client.steps.list({ agent_id: agentId, feedback: 'positive' });
    expect(rows.getPaginatedItems().map((s) => s.id)).toEqual([steps[0].id]);
    const none = await client.steps.list({ agent_id: agentId, has_feedback: false });
    expect(none.getPaginatedItems()).toEqual([]);
    const metrics: Letta.Steps.MetricRetrieveResponse = await client.steps.metrics.retrieve(
      steps[0].id,
    );
    expect(metrics).toMatchObject({
      id: steps[0].id,
      run_id: runId,
      llm_request_ns: expect.any(Number),
      llm_request_start_ns: expect.any(Number),
      tool_execution_ns: null,
    });
    expect(await client.steps.trace.retrieve(steps[0].id)).toBeNull();
    await expect(client.runs.trace.retrieve(runId)).rejects.toMatchObject({
      status: 501,
      error: { code: 'TRACES_NOT_STORED' },
    });

    const all = await client.messages.list({ limit: 5 });
    expect(all[0]).toMatchObject({ message_type: 'assistant_message', content: 'the walk answer' });
    expect(await client.messages.retrieve(all[0].id)).toMatchObject([{ id: all[0].id }]);
    const hits = await client.messages.search({ query: 'WALK ANSWER', agent_id: agentId });
    expect(hits.map((h: any) => h.message_id)).toEqual([all[0].id]);
    const later = await client.messages.search({
      query: 'WALK ANSWER',
      agent_id: agentId,
      start_date: all[0].date,
    });
    expect(later).toEqual([]);

    expect(await client.tags.list({ query_text: 'sdk' })).toEqual(['sdk-walk']);
  });

  it('tools: list by name, search, add-base-tools; source_code is a clear 400', async () => {
    const byName = (await client.tools.list({ name: 'send_message' })).getPaginatedItems();
    expect(byName.map((x) => x.name)).toEqual(['send_message']);
    const all = (await client.tools.list()).getPaginatedItems();
    const list = async (q: Record<string, unknown>) =>
      (await client.tools.list(q as any)).getPaginatedItems().map((x) => x.id);
    expect(await list({ tool_ids: [all[1].id, all[0].id] })).toEqual([all[0].id, all[1].id]);
    const types = new Set(all.map((x) => x.tool_type));
    expect(types.size).toBeGreaterThan(1);
    const first = all[0].tool_type!;
    expect(await list({ tool_types: [first] })).toEqual(
      all.filter((x) => x.tool_type === first).map((x) => x.id),
    );
    expect(await list({ exclude_tool_types: [first] })).toEqual(
      all.filter((x) => x.tool_type !== first).map((x) => x.id),
    );
    expect(await list({ return_only_letta_tools: true })).toEqual(
      all.filter((x) => x.tool_type!.startsWith('letta_')).map((x) => x.id),
    );
    const hits = await client.tools.search({ query: 'core memory append' });
    expect(hits.map((h) => h.tool.name)).toEqual(['core_memory_append']);
    const base = await (client.tools as any)._client.post('/v1/tools/add-base-tools');
    expect(base.map((x: any) => x.name)).toEqual(expect.arrayContaining(['send_message']));
    await expect(
      client.tools.create({ source_code: 'def f():\n    return 1' }),
    ).rejects.toMatchObject({
      status: 400,
      error: { details: { problems: [expect.objectContaining({ path: 'source_code' })] } },
    });
  });

  it('tools: upsert, update, agents.tools.run through the rules', async () => {
    const declaration = {
      name: 'sdk_lookup',
      description: 'looks up',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      safety: 'read_only',
      kind: 'http',
      http: { url: `${env.tools.baseUrl}/tool/sdk_lookup`, method: 'POST' },
    };
    // our http declaration is not Letta's (source_code): the SDK sends whatever body it is given
    const created: Letta.Tool = await client.tools.upsert(declaration as any);
    expect(created).toMatchObject({ name: 'sdk_lookup', tool_type: 'custom' });
    const upserted = await client.tools.upsert({ ...declaration, description: 'v2' } as any);
    expect(upserted).toMatchObject({ id: created.id, description: 'v2' });
    const updated: Letta.Tool = await client.tools.update(created.id, { description: 'v3' });
    expect(updated).toMatchObject({ id: created.id, description: 'v3' });

    const agent = await client.agents.create({
      name: 'sdk-tool-runner',
      model: 'scripted/default',
      tools: ['sdk_lookup'],
      include_base_tools: false,
      tool_rules: [{ type: 'max_count_per_step', tool_name: 'sdk_lookup', max_count_limit: 1 }],
    } as any);
    const ran: Letta.Agents.ToolExecutionResult = await client.agents.tools.run('sdk_lookup', {
      agent_id: agent.id,
      args: { q: 'walk' },
    });
    expect(ran).toMatchObject({ status: 'success', func_return: 'ok:sdk_lookup' });
    expect(env.tools.calls).toEqual([
      expect.objectContaining({ name: 'sdk_lookup', arguments: { q: 'walk' } }),
    ]);
  });
  it('blocks: create, retrieve, update, list, agents.blocks attach/detach, blocks.agents, delete', async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const block: Letta.BlockResponse = await client.blocks.create({
      label: 'sdk-shared',
      value: 'v1',
      limit: 100,
    });
    expect(await client.blocks.retrieve(block.id)).toMatchObject({ id: block.id, value: 'v1' });
    expect(await client.blocks.update(block.id, { value: 'v2' })).toMatchObject({ value: 'v2' });
    expect(
      (await client.blocks.list({ label: 'sdk-shared' })).getPaginatedItems().map((b) => b.id),
    ).toEqual([block.id]);
    const attached: Letta.AgentState = await client.agents.blocks.attach(block.id, {
      agent_id: agentId,
    });
    expect(attached.memory.blocks.map((b) => b.id)).toContain(block.id);
    expect((await client.blocks.agents.list(block.id)).getPaginatedItems()).toEqual([
      expect.objectContaining({ id: agentId }),
    ]);
    expect(
      await client.agents.blocks.update('sdk-shared', { agent_id: agentId, value: 'v3' }),
    ).toMatchObject({ id: block.id, value: 'v3' });
    expect(
      (await client.agents.blocks.detach(block.id, { agent_id: agentId })).memory.blocks,
    ).toEqual([]);
    await client.blocks.delete(block.id);
    await expect(client.blocks.retrieve(block.id)).rejects.toMatchObject({ status: 404 });
  });

  it('archival memory: agents.passages, archives, archives.passages, agents.archives, passages.search', async () => {
    const agentId = await createAgent(t, fake, { include_base_tools: false });
    const [passage] = await client.agents.passages.create(agentId, {
      text: 'The walk passage about lighthouses',
      tags: ['sdk'],
    });
    expect(passage).toMatchObject({ text: 'The walk passage about lighthouses', tags: ['sdk'] });
    expect((await client.agents.passages.list(agentId)).map((p) => p.id)).toEqual([passage.id]);
    expect(await client.agents.passages.search(agentId, { query: 'lighthouse' })).toMatchObject({
      count: 1,
      results: [{ id: passage.id, content: passage.text }],
    });
    expect(await client.passages.search({ query: 'lighthouses', agent_id: agentId })).toEqual([
      expect.objectContaining({ passage: expect.objectContaining({ id: passage.id }) }),
    ]);
    await client.agents.passages.delete(passage.id!, { agent_id: agentId });
    expect(await client.agents.passages.list(agentId)).toEqual([]);

    const archive: Letta.Archive = await client.archives.create({ name: 'sdk-archive' });
    expect(await client.archives.retrieve(archive.id)).toMatchObject({ name: 'sdk-archive' });
    expect(await client.archives.update(archive.id, { description: 'walk' })).toMatchObject({
      description: 'walk',
    });
    expect(
      (await client.archives.list({ name: 'sdk-archive' })).getPaginatedItems().map((a) => a.id),
    ).toEqual([archive.id]);
    const inArchive = await client.archives.passages.create(archive.id, { text: 'harbour lights' });
    expect(inArchive).toMatchObject({ archive_id: archive.id });
    expect(
      await client.archives.passages.createMany(archive.id, { passages: [{ text: 'one' }] }),
    ).toHaveLength(1);
    await client.archives.passages.delete(inArchive.id!, { archive_id: archive.id });
    expect(await client.passages.search({ query: 'harbour', archive_id: archive.id })).toEqual([]);
    const other = await createAgent(t, fake, { include_base_tools: false });
    expect(await client.agents.archives.attach(archive.id, { agent_id: other })).toBeTruthy();
    expect(
      (await client.archives.list({ agent_id: other })).getPaginatedItems().map((a) => a.id),
    ).toEqual([archive.id]);
    expect(await client.agents.archives.detach(archive.id, { agent_id: other })).toBeTruthy();
    await client.archives.delete(archive.id);
    await expect(client.archives.retrieve(archive.id)).rejects.toMatchObject({ status: 404 });
  });

  it('identities: CRUD (the SDK has no identities resource: its client), attach, filters, include', async () => {
    // SDK 1.12 keeps only agents.identities; /v1/identities is reached through its own HTTP client
    const http = client as unknown as {
      post(path: string, o?: object): Promise<any>;
      get(path: string, o?: object): Promise<any>;
      put(path: string, o?: object): Promise<any>;
      patch(path: string, o?: object): Promise<any>;
      delete(path: string, o?: object): Promise<any>;
    };
    const ada: Letta.Agents.AgentState.Identity = await http.post('/v1/identities/', {
      body: { identifier_key: 'sdk-ada', name: 'Ada', identity_type: 'user' },
    });
    expect(ada).toMatchObject({ identifier_key: 'sdk-ada', agent_ids: [], block_ids: [] });
    expect(await http.get(`/v1/identities/${ada.id}`)).toMatchObject({ id: ada.id });
    expect(await http.get('/v1/identities/', { query: { identifier_key: 'sdk-ada' } })).toEqual([
      expect.objectContaining({ id: ada.id }),
    ]);
    expect(
      await http.put('/v1/identities/', {
        body: { identifier_key: 'sdk-ada', name: 'Ada L.', identity_type: 'user' },
      }),
    ).toMatchObject({ id: ada.id, name: 'Ada L.' });
    expect(
      await http.patch(`/v1/identities/${ada.id}`, {
        body: { properties: [{ key: 'tier', value: 'gold', type: 'string' }] },
      }),
    ).toMatchObject({ properties: [{ key: 'tier', value: 'gold', type: 'string' }] });

    const agent = await client.agents.create({
      name: 'sdk-identity-agent',
      model: 'scripted/default',
      identity_ids: [ada.id],
    });
    expect(agent.identity_ids).toEqual([ada.id]);
    await client.agents.identities.detach(ada.id, { agent_id: agent.id });
    expect((await client.agents.retrieve(agent.id)).identity_ids).toEqual([]);
    await client.agents.identities.attach(ada.id, { agent_id: agent.id });
    const filtered = (await client.agents.list({ identity_id: ada.id })).getPaginatedItems();
    expect(filtered.map((a) => a.id)).toEqual([agent.id]);
    const slim = await client.agents.retrieve(agent.id, { include: ['agent.identities'] });
    expect([slim.tools, slim.identities?.map((i) => i.id)]).toEqual([[], [ada.id]]);
    expect(await http.get(`/v1/identities/${ada.id}/agents`)).toEqual([
      expect.objectContaining({ id: agent.id }),
    ]);
    expect(await http.delete(`/v1/identities/${ada.id}`)).toMatchObject({
      message: expect.any(String),
    });
  });
});
