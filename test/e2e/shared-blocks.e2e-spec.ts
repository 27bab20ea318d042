/* eslint-disable @typescript-eslint/no-explicit-any */
import Letta from '@letta-ai/letta-client';
import { AgentsRepository } from '../../src/agents/agents.repository';
import { startApp, TestApp } from '../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../support/fake-model-server';
import { api, say, TENANT_A, TENANT_B, TWO_TENANTS } from '../support/processing-fixtures';

/** Letta's standalone blocks: CRUD, attach/detach, one block shared by two agents, tenants apart. */
describe('shared memory blocks (/v1/blocks, core-memory/blocks/attach|detach)', () => {
  let t: TestApp;
  let fake: FakeModelServer;
  let a: Letta;
  let b: Letta;
  const key = { a: TENANT_A, b: TENANT_B };

  beforeAll(async () => {
    fake = await startFakeModelServer();
    t = await startApp({
      modelBaseUrl: fake.baseUrl,
      overrides: TWO_TENANTS,
    });
    a = new Letta({ baseURL: t.baseUrl, apiKey: 'key-a', maxRetries: 0 });
    b = new Letta({ baseURL: t.baseUrl, apiKey: 'key-b', maxRetries: 0 });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => fake.reset());

  const agentOf = async (name: string) => {
    const created = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name,
        system: `You are ${name}.`,
        llm_config: {
          model: 'fake',
          model_endpoint_type: 'openai',
          model_endpoint: fake.baseUrl,
          context_window: 8000,
        },
        memory_blocks: [{ label: 'persona', value: `I am ${name}.` }],
      },
      key.a,
    );
    expect(created.status).toBe(200);
    return created.body.id as string;
  };
  /** The system prompt of the agent's next model call. */
  const systemSeenBy = async (agentId: string) => {
    const before = fake.requests.length;
    const res = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('hi'), key.a);
    expect(res.status).toBe(200);
    return fake.requests[before].system;
  };

  it('creates, retrieves, lists (label, search, cursors) and updates standalone blocks', async () => {
    const first = await a.blocks.create({ label: 'notes', value: 'alpha', limit: 50 });
    expect(first).toMatchObject({ label: 'notes', value: 'alpha', limit: 50, read_only: false });
    expect(first.id).toMatch(/^block-/);
    const second = await a.blocks.create({
      label: 'facts',
      value: 'beta gamma',
      description: 'things',
      metadata: { k: 1 },
    });
    expect(await a.blocks.retrieve(second.id)).toMatchObject({ metadata: { k: 1 } });

    const all = (await a.blocks.list()).getPaginatedItems();
    expect(all.map((x) => x.id)).toEqual([first.id, second.id]); // oldest first, as Letta's
    expect((await a.blocks.list({ label: 'notes' })).getPaginatedItems()).toHaveLength(1);
    expect(
      (await a.blocks.list({ value_search: 'GAMMA' })).getPaginatedItems().map((x) => x.id),
    ).toEqual([second.id]);
    const page = await a.blocks.list({ limit: 1 });
    expect(page.getPaginatedItems().map((x) => x.id)).toEqual([first.id]);
    const next = await page.getNextPage();
    expect(next.getPaginatedItems().map((x) => x.id)).toEqual([second.id]);

    const updated = await a.blocks.update(first.id, { value: 'alpha two', description: 'd' });
    expect(updated).toMatchObject({ value: 'alpha two', description: 'd', limit: 50 });
    const tooLong = await api(
      t,
      'PATCH',
      `/v1/blocks/${first.id}`,
      { value: 'x'.repeat(51) },
      key.a,
    );
    expect(tooLong).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    const badCreate = await api(t, 'POST', '/v1/blocks/', { value: 'no label' }, key.a);
    expect(badCreate).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    const overMax = await api(
      t,
      'POST',
      '/v1/blocks/',
      { label: 'x', value: '', limit: 1e9 },
      key.a,
    );
    expect(overMax).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });

    await a.blocks.delete(second.id);
    await expect(a.blocks.retrieve(second.id)).rejects.toMatchObject({ status: 404 });
  });

  it('one block attached to two agents: an edit through either one, the block route or a memory tool reaches both', async () => {
    const shared = await a.blocks.create({ label: 'team', value: 'Team: blue.', limit: 500 });
    const one = await agentOf('one');
    const two = await agentOf('two');
    const attached = await a.agents.blocks.attach(shared.id, { agent_id: one });
    expect(attached.memory.blocks.map((x) => x.label)).toEqual(['persona', 'team']);
    await a.agents.blocks.attach(shared.id, { agent_id: two });
    // attaching again changes nothing
    await a.agents.blocks.attach(shared.id, { agent_id: two });
    const agentsOf = (await a.blocks.agents.list(shared.id)).getPaginatedItems();
    expect(agentsOf.map((x) => x.id).sort()).toEqual([one, two].sort());

    // both agents' records are read (and cached on SQLite) before the edits
    expect(await systemSeenBy(one)).toContain('Team: blue.');
    expect(await systemSeenBy(two)).toContain('Team: blue.');

    // through agent one's route, by label
    await a.agents.blocks.update('team', { agent_id: one, value: 'Team: green.' });
    expect((await a.agents.blocks.retrieve('team', { agent_id: two })).value).toBe('Team: green.');
    expect(await systemSeenBy(two)).toContain('Team: green.');

    // through the block route
    await a.blocks.update(shared.id, { value: 'Team: red.' });
    expect(await systemSeenBy(one)).toContain('Team: red.');
    expect(await systemSeenBy(two)).toContain('Team: red.');

    // through agent one's core_memory_append tool: agent two's next call sees it
    fake.push(
      {
        tool_calls: [
          { name: 'core_memory_append', arguments: { label: 'team', content: 'Likes tea.' } },
        ],
      },
      { content: 'noted' },
    );
    const res = await api(t, 'POST', `/v1/agents/${one}/messages`, say('remember'), key.a);
    expect(res.status).toBe(200);
    expect((await a.blocks.retrieve(shared.id)).value).toBe('Team: red.\nLikes tea.');
    expect(await systemSeenBy(two)).toContain('Likes tea.');
    expect(
      (await a.agents.retrieve(two)).memory.blocks.find((x) => x.label === 'team')?.value,
    ).toBe('Team: red.\nLikes tea.');

    // detach from one: two keeps it, the block stays
    const detached = await a.agents.blocks.detach(shared.id, { agent_id: one });
    expect(detached.memory.blocks.map((x) => x.label)).toEqual(['persona']);
    expect(await systemSeenBy(one)).not.toContain('Likes tea.');
    expect((await a.agents.blocks.list(two)).getPaginatedItems().map((x) => x.label)).toEqual([
      'persona',
      'team',
    ]);

    // deleting the block takes it from two as well
    await a.blocks.delete(shared.id);
    expect(await systemSeenBy(two)).not.toContain('Likes tea.');
    expect((await a.agents.retrieve(two)).memory.blocks.map((x) => x.label)).toEqual(['persona']);
  });

  it('a memory tool edit with a NUL character is the model’s tool error, the block unchanged (PostgreSQL cannot store one)', async () => {
    const one = await agentOf('nul-writer');
    fake.push(
      {
        tool_calls: [
          { name: 'core_memory_append', arguments: { label: 'persona', content: 'a\u0000b' } },
        ],
      },
      { content: 'ok' },
    );
    const res = await api(t, 'POST', `/v1/agents/${one}/messages`, say('remember'), key.a);
    expect(res.status).toBe(200);
    const ret = res.body.messages.find((m: any) => m.message_type === 'tool_return_message');
    expect(ret).toMatchObject({ status: 'error' });
    expect(ret.tool_return).toContain('must not contain NUL characters');
    const agent = await a.agents.retrieve(one);
    expect(agent.memory.blocks.find((x) => x.label === 'persona')?.value).toBe('I am nul-writer.');
  });

  it('labels stay unique per agent: attaching a taken label or renaming into one is 409', async () => {
    const agent = await agentOf('labels');
    const clash = await a.blocks.create({ label: 'persona', value: 'other persona' });
    const res = await api(
      t,
      'PATCH',
      `/v1/agents/${agent}/core-memory/blocks/attach/${clash.id}`,
      undefined,
      key.a,
    );
    expect(res).toMatchObject({ status: 409, body: { code: 'BLOCK_LABEL_TAKEN' } });
    const other = await a.blocks.create({ label: 'extra', value: '' });
    await a.agents.blocks.attach(other.id, { agent_id: agent });
    const rename = await api(t, 'PATCH', `/v1/blocks/${other.id}`, { label: 'persona' }, key.a);
    expect(rename).toMatchObject({ status: 409, body: { code: 'BLOCK_LABEL_TAKEN' } });
  });

  it('deleting an agent deletes the blocks no other agent has', async () => {
    const agent = await agentOf('owner');
    const [persona] = (await a.agents.blocks.list(agent)).getPaginatedItems();
    await a.agents.delete(agent);
    await expect(a.blocks.retrieve(persona.id)).rejects.toMatchObject({ status: 404 });
  });

  it("tenant B cannot see, change or attach tenant A's block (404), nor attach to A's agent", async () => {
    const secret = await a.blocks.create({ label: 'secret', value: 'A only' });
    const theirAgent = (await b.agents.create({ name: 'b-agent' })).id;
    await expect(b.blocks.retrieve(secret.id)).rejects.toMatchObject({ status: 404 });
    await expect(b.blocks.update(secret.id, { value: 'pwned' })).rejects.toMatchObject({
      status: 404,
    });
    await expect(b.blocks.delete(secret.id)).rejects.toMatchObject({ status: 404 });
    await expect(b.agents.blocks.attach(secret.id, { agent_id: theirAgent })).rejects.toMatchObject(
      { status: 404 },
    );
    expect((await b.blocks.list()).getPaginatedItems()).toEqual([]);
    const mine = await b.blocks.create({ label: 'b', value: '' });
    const aAgent = await agentOf('victim');
    await expect(b.agents.blocks.attach(mine.id, { agent_id: aAgent })).rejects.toMatchObject({
      status: 404,
    });
    expect((await a.blocks.retrieve(secret.id)).value).toBe('A only');
  });

  it('an agent update with memory_blocks keeps a shared block by label (same id) and edits it for all', async () => {
    const shared = await a.blocks.create({ label: 'rules', value: 'v1' });
    const x = await agentOf('x');
    const y = await agentOf('y');
    await a.agents.blocks.attach(shared.id, { agent_id: x });
    await a.agents.blocks.attach(shared.id, { agent_id: y });
    await a.agents.update(x, {
      memory_blocks: [
        { label: 'persona', value: 'I am x.' },
        { label: 'rules', value: 'v2' },
      ],
    } as any);
    expect((await a.blocks.retrieve(shared.id)).value).toBe('v2');
    expect(await systemSeenBy(y)).toContain('v2');
  });
  it("Letta's block_ids: an agent created with shared blocks; an update's block_ids is its whole list", async () => {
    const shared = await a.blocks.create({ label: 'org', value: 'Acme' });
    const created = await a.agents.create({
      name: 'with-ids',
      memory_blocks: [{ label: 'persona', value: 'p' }],
      block_ids: [shared.id],
    });
    expect(created.memory.blocks.map((x) => [x.label, x.id])).toEqual([
      ['persona', expect.stringMatching(/^block-/)],
      ['org', shared.id],
    ]);
    const clash = await a.blocks.create({ label: 'persona', value: 'other' });
    const bad = await api(t, 'POST', '/v1/agents/', { name: 'x', block_ids: [clash.id] }, key.a);
    expect(bad.status).toBe(200); // no memory_blocks: no clash
    const twice = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'y', memory_blocks: [{ label: 'persona', value: '' }], block_ids: [clash.id] },
      key.a,
    );
    expect(twice).toMatchObject({ status: 409, body: { code: 'BLOCK_LABEL_TAKEN' } });
    const unknown = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'z', block_ids: ['block-x'] },
      key.a,
    );
    expect(unknown).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
    const theirs = await b.blocks.create({ label: 'b-only', value: '' });
    const foreign = await api(
      t,
      'POST',
      '/v1/agents/',
      { name: 'w', block_ids: [theirs.id] },
      key.a,
    );
    expect(foreign).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });

    const updated = await a.agents.update(created.id, { block_ids: [shared.id] });
    expect(updated.memory.blocks.map((x) => x.id)).toEqual([shared.id]);
    // the block left out stays (as a detach does)
    const persona = created.memory.blocks[0].id!;
    expect((await a.blocks.retrieve(persona)).value).toBe('p');
  });
  it("saving an agent read before a shared block's edit does not overwrite the edit with its stale copy", async () => {
    const shared = await a.blocks.create({ label: 'ledger', value: 'v1' });
    const reader = await agentOf('stale-reader');
    await a.agents.blocks.attach(shared.id, { agent_id: reader });
    const repo = t.app.get(AgentsRepository);
    const stale = (await repo.findForTenant('tenant-a', reader))!; // holds ledger = v1
    await a.blocks.update(shared.id, { value: 'v2' }); // meanwhile, through the block route
    stale.tags = ['touched'];
    await repo.save(stale);
    expect((await a.blocks.retrieve(shared.id)).value).toBe('v2');
  });
});
