/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import type { TestApp } from '../support/app-harness';
import type { FakeModelServer } from '../support/fake-model-server';
import { createAgent, LoopEnv, startLoopEnv } from '../support/processing-fixtures';

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
});
