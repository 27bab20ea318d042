import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';

/** Letta's core-memory block routes, through the SDK. */
describe('memory blocks (core-memory/blocks)', () => {
  let t: TestApp;
  let client: Letta;
  let agentId: string;

  beforeAll(async () => {
    t = await startApp();
    client = new Letta({ baseURL: t.baseUrl, apiKey: 'none', maxRetries: 0 });
    const agent = await client.agents.create({
      name: 'blocks',
      memory_blocks: [
        { label: 'human', value: 'Name: Ada', limit: 100 },
        { label: 'policy', value: 'Be kind.', read_only: true },
      ],
    });
    agentId = agent.id;
  });
  afterAll(() => t.close());

  const raw = (method: string, path: string, body?: unknown) =>
    fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, unknown> }));

  it('lists and retrieves blocks by label', async () => {
    // made together with the agent: newest first is the agent's order reversed (Letta's default desc)
    const page = await client.agents.blocks.list(agentId);
    expect(page.getPaginatedItems().map((b) => b.label)).toEqual(['policy', 'human']);
    const asc = await client.agents.blocks.list(agentId, { order: 'asc' });
    expect(asc.getPaginatedItems().map((b) => b.label)).toEqual(['human', 'policy']);
    const human = await client.agents.blocks.retrieve('human', { agent_id: agentId });
    expect(human).toMatchObject({ label: 'human', value: 'Name: Ada', limit: 100 });
  });

  it('updates a block; the agent shows it; read_only binds the agent, not the owner', async () => {
    const updated = await client.agents.blocks.update('human', {
      agent_id: agentId,
      value: 'Name: Ada Lovelace',
    });
    expect(updated.value).toBe('Name: Ada Lovelace');
    const agent = await client.agents.retrieve(agentId);
    expect(agent.memory.blocks.find((b) => b.label === 'human')?.value).toBe('Name: Ada Lovelace');
    const policy = await client.agents.blocks.update('policy', {
      agent_id: agentId,
      value: 'Be kind and brief.',
    });
    expect(policy).toMatchObject({ value: 'Be kind and brief.', read_only: true });
  });

  it("null in an update keeps a block's description and metadata, as Letta's BlockUpdate sets only what is given not null", async () => {
    const block = await client.blocks.create({
      label: 'notes',
      value: 'v',
      description: 'what the agent noted',
      metadata: { team: 'ops' },
    });
    const res = await raw('PATCH', `/v1/blocks/${block.id}`, {
      description: null,
      metadata: null,
      value: 'w',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      value: 'w',
      description: 'what the agent noted',
      metadata: { team: 'ops' },
    });
  });

  it.each([
    ['an unknown label', 'nope', { value: 'x' }, 404, 'NOT_FOUND'],
    ['a value over the limit', 'human', { value: 'x'.repeat(101) }, 400, 'VALIDATION_FAILED'],
    ['a wrong type', 'human', { limit: -1 }, 400, 'VALIDATION_FAILED'],
  ])('refuses %s', async (_what, label, body, status, code) => {
    const res = await raw('PATCH', `/v1/agents/${agentId}/core-memory/blocks/${label}`, body);
    expect(res.status).toBe(status);
    expect(res.body.code).toBe(code);
  });

  it('another agent id is a 404', async () => {
    const res = await raw(
      'GET',
      '/v1/agents/agent-00000000-0000-4000-8000-000000000000/core-memory/blocks/human',
    );
    expect(res.status).toBe(404);
  });
});
