/* eslint-disable @typescript-eslint/no-explicit-any */
import { startApp, TestApp } from '../support/app-harness';
import { api } from '../support/processing-fixtures';

/** Letta's identities, agents' identity_ids and filters, the `include` parameter and agent secrets. */
describe('identities, include and agent secrets', () => {
  const A = { authorization: 'Bearer key-a' };
  const B = { authorization: 'Bearer key-b' };
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: 'key-a', tenant: 'tenant-a' },
            { key: 'key-b', tenant: 'tenant-b' },
          ],
        },
        identities: { max_per_agent: 2, max_properties: 3 },
      },
    });
  });
  afterAll(() => t.close());

  const identity = async (key: string, who = A, over: Record<string, unknown> = {}) => {
    const r = await api(
      t,
      'POST',
      '/v1/identities/',
      { identifier_key: key, name: `name of ${key}`, identity_type: 'user', ...over },
      who,
    );
    expect(r.status).toBe(200);
    return r.body;
  };
  const agent = async (name: string, who = A, over: Record<string, unknown> = {}) => {
    const r = await api(
      t,
      'POST',
      '/v1/agents/',
      { name, model: 'scripted/default', tags: ['t1'], ...over },
      who,
    );
    expect(r.status).toBe(200);
    return r.body;
  };

  describe('/v1/identities', () => {
    it('create, retrieve, list with filters, count, update, upsert by key, properties, delete', async () => {
      const created = await identity('crud-1', A, {
        identity_type: 'org',
        properties: [{ key: 'plan', value: 'pro', type: 'string' }],
      });
      expect(created).toMatchObject({
        id: expect.stringMatching(/^identity-/),
        identifier_key: 'crud-1',
        identity_type: 'org',
        agent_ids: [],
        block_ids: [],
        properties: [{ key: 'plan', value: 'pro', type: 'string' }],
      });
      expect((await api(t, 'GET', `/v1/identities/${created.id}`, undefined, A)).body).toEqual(
        created,
      );
      const byKey = await api(t, 'GET', '/v1/identities/?identifier_key=crud-1', undefined, A);
      expect(byKey.body.map((i: any) => i.id)).toEqual([created.id]);
      const orgs = await api(t, 'GET', '/v1/identities/?identity_type=org', undefined, A);
      expect(orgs.body.map((i: any) => i.id)).toContain(created.id);
      expect(typeof (await api(t, 'GET', '/v1/identities/count', undefined, A)).body).toBe(
        'number',
      );
      const patched = await api(t, 'PATCH', `/v1/identities/${created.id}`, { name: 'Acme' }, A);
      expect(patched.body).toMatchObject({ name: 'Acme', identifier_key: 'crud-1' });
      const upserted = await api(
        t,
        'PUT',
        '/v1/identities/',
        { identifier_key: 'crud-1', name: 'Acme Inc', identity_type: 'org' },
        A,
      );
      expect(upserted.body).toMatchObject({ id: created.id, name: 'Acme Inc' });
      const props = await api(
        t,
        'PUT',
        `/v1/identities/${created.id}/properties`,
        [{ key: 'seats', value: 5, type: 'number' }],
        A,
      );
      expect(props.body.properties).toEqual([{ key: 'seats', value: 5, type: 'number' }]);
      expect((await api(t, 'DELETE', `/v1/identities/${created.id}`, undefined, A)).status).toBe(
        200,
      );
      expect((await api(t, 'GET', `/v1/identities/${created.id}`, undefined, A)).status).toBe(404);
    });

    it("PATCH merges properties by key and adds agent_ids, as Letta's; upsert and PUT …/properties replace", async () => {
      const a1 = await agent('merge-1');
      const a2 = await agent('merge-2');
      const a3 = await agent('merge-3');
      const created = await identity('merge', A, {
        agent_ids: [a1.id],
        properties: [
          { key: 'plan', value: 'free', type: 'string' },
          { key: 'seats', value: 1, type: 'number' },
        ],
      });
      const patch = (body: Record<string, unknown>) =>
        api(t, 'PATCH', `/v1/identities/${created.id}`, body, A);
      const patched = await patch({
        agent_ids: [a2.id],
        properties: [
          { key: 'seats', value: 5, type: 'number' },
          { key: 'beta', value: true, type: 'boolean' },
        ],
      });
      expect(patched.status).toBe(200);
      expect(patched.body.agent_ids.sort()).toEqual([a1.id, a2.id].sort());
      expect(patched.body.properties).toEqual([
        { key: 'plan', value: 'free', type: 'string' },
        { key: 'seats', value: 5, type: 'number' },
        { key: 'beta', value: true, type: 'boolean' },
      ]);
      // an empty or null list changes nothing; an agent given again stays once
      const same = await patch({ agent_ids: [], properties: null });
      expect(same.body.agent_ids.sort()).toEqual([a1.id, a2.id].sort());
      const again = await patch({ agent_ids: [a1.id] });
      expect(again.body.agent_ids.sort()).toEqual([a1.id, a2.id].sort());
      expect(same.body.properties).toHaveLength(3);
      // the merged properties keep the bound (max_properties 3 here): nothing changed
      const over = await patch({ properties: [{ key: 'extra', value: 'x', type: 'string' }] });
      expect(over.status).toBe(400);
      expect(over.body.code).toBe('LIMIT_EXCEEDED');
      expect(
        (await api(t, 'GET', `/v1/identities/${created.id}`, undefined, A)).body.properties,
      ).toHaveLength(3);
      // upsert by key replaces both lists
      const upserted = await api(
        t,
        'PUT',
        '/v1/identities/',
        {
          identifier_key: 'merge',
          name: 'm',
          identity_type: 'user',
          agent_ids: [a3.id],
          properties: [{ key: 'plan', value: 'pro', type: 'string' }],
        },
        A,
      );
      expect(upserted.body).toMatchObject({
        agent_ids: [a3.id],
        properties: [{ key: 'plan', value: 'pro', type: 'string' }],
      });
      const put = await api(
        t,
        'PUT',
        `/v1/identities/${created.id}/properties`,
        [{ key: 'seats', value: 2, type: 'number' }],
        A,
      );
      expect(put.body.properties).toEqual([{ key: 'seats', value: 2, type: 'number' }]);
    });

    it('a taken identifier_key is 409 IDENTITY_EXISTS; another tenant may use it', async () => {
      await identity('taken');
      const again = await api(
        t,
        'POST',
        '/v1/identities/',
        { identifier_key: 'taken', name: 'x', identity_type: 'user' },
        A,
      );
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('IDENTITY_EXISTS');
      await identity('taken', B);
    });

    it('bounds and bad values are 400 with their paths', async () => {
      const bad = await api(
        t,
        'POST',
        '/v1/identities/',
        {
          identifier_key: 'k'.repeat(201),
          identity_type: 'robot',
          properties: [{ key: 'n', value: 'five', type: 'number' }],
        },
        A,
      );
      expect(bad.status).toBe(400);
      expect(bad.body.details.problems.map((p: any) => p.path).sort()).toEqual([
        'identifier_key',
        'identity_type',
        'name',
        'properties[0].value',
      ]);
      const many = await api(
        t,
        'POST',
        '/v1/identities/',
        {
          identifier_key: 'many',
          name: 'm',
          identity_type: 'user',
          properties: [1, 2, 3, 4].map((i) => ({ key: `k${i}`, value: i, type: 'number' })),
        },
        A,
      );
      expect(many.status).toBe(400);
      expect(many.body.code).toBe('LIMIT_EXCEEDED');
      expect((await api(t, 'GET', '/v1/identities/?limit=0', undefined, A)).status).toBe(400);
      expect((await api(t, 'GET', '/v1/identities/nope', undefined, A)).status).toBe(404);
    });

    it("tenants never see each other's identities", async () => {
      const mine = await identity('private-a');
      for (const [method, path, body] of [
        ['GET', `/v1/identities/${mine.id}`, undefined],
        ['PATCH', `/v1/identities/${mine.id}`, { name: 'x' }],
        ['PUT', `/v1/identities/${mine.id}/properties`, []],
        ['DELETE', `/v1/identities/${mine.id}`, undefined],
        ['GET', `/v1/identities/${mine.id}/agents`, undefined],
      ] as const)
        expect((await api(t, method, path, body, B)).status).toBe(404);
      const listed = await api(t, 'GET', '/v1/identities/?identifier_key=private-a', undefined, B);
      expect(listed.body).toEqual([]);
      // B's upsert of the same key makes B's own identity
      const theirs = await api(
        t,
        'PUT',
        '/v1/identities/',
        { identifier_key: 'private-a', name: 'B', identity_type: 'user' },
        B,
      );
      expect(theirs.body.id).not.toBe(mine.id);
      expect((await api(t, 'GET', `/v1/identities/${mine.id}`, undefined, A)).body.name).toBe(
        'name of private-a',
      );
    });
  });

  describe('agents and identities', () => {
    it('identity_ids on create and update, the identity_id and identifier_keys filters, identity agents', async () => {
      const ada = await identity('ada');
      const bob = await identity('bob');
      const a1 = await agent('with-ada', A, { identity_ids: [ada.id] });
      expect(a1).toMatchObject({ identity_ids: [ada.id], identities: [{ id: ada.id }] });
      const a2 = await agent('with-bob', A, { identity_ids: [bob.id] });
      const byId = await api(t, 'GET', `/v1/agents/?identity_id=${ada.id}`, undefined, A);
      expect(byId.body.map((x: any) => x.id)).toEqual([a1.id]);
      const byKeys = await api(
        t,
        'GET',
        '/v1/agents/?identifier_keys=ada&identifier_keys=bob',
        undefined,
        A,
      );
      expect(byKeys.body.map((x: any) => x.id).sort()).toEqual([a1.id, a2.id].sort());
      const agentsOf = await api(t, 'GET', `/v1/identities/${bob.id}/agents`, undefined, A);
      expect(agentsOf.body.map((x: any) => x.id)).toEqual([a2.id]);
      expect(
        (await api(t, 'GET', `/v1/identities/${bob.id}`, undefined, A)).body.agent_ids,
      ).toEqual([a2.id]);
      const moved = await api(t, 'PATCH', `/v1/agents/${a2.id}`, { identity_ids: [ada.id] }, A);
      expect(moved.body.identity_ids).toEqual([ada.id]);
      expect((await api(t, 'GET', `/v1/identities/${bob.id}/agents`, undefined, A)).body).toEqual(
        [],
      );
    });

    it('attach and detach (idempotent), bounded per agent; deleting either side drops the link', async () => {
      const i1 = await identity('att-1');
      const i2 = await identity('att-2');
      const i3 = await identity('att-3');
      const a = await agent('attacher');
      const attach = (i: string) =>
        api(t, 'PATCH', `/v1/agents/${a.id}/identities/attach/${i}`, undefined, A);
      expect((await attach(i1.id)).body.identity_ids).toEqual([i1.id]);
      expect((await attach(i1.id)).body.identity_ids).toEqual([i1.id]);
      await attach(i2.id);
      const third = await attach(i3.id);
      expect(third.status).toBe(400);
      expect(third.body.code).toBe('LIMIT_EXCEEDED');
      const detached = await api(
        t,
        'PATCH',
        `/v1/agents/${a.id}/identities/detach/${i1.id}`,
        undefined,
        A,
      );
      expect(detached.body.identity_ids).toEqual([i2.id]);
      await api(t, 'DELETE', `/v1/identities/${i2.id}`, undefined, A);
      expect((await api(t, 'GET', `/v1/agents/${a.id}`, undefined, A)).body.identity_ids).toEqual(
        [],
      );
      await attach(i3.id);
      await api(t, 'DELETE', `/v1/agents/${a.id}`, undefined, A);
      expect((await api(t, 'GET', `/v1/identities/${i3.id}`, undefined, A)).body.agent_ids).toEqual(
        [],
      );
    });

    it("a hostile tenant cannot link, filter by or list across another tenant's rows", async () => {
      const aIdentity = await identity('hostile-a');
      const aAgent = await agent('hostile-target', A, { identity_ids: [aIdentity.id] });
      const bIdentity = await identity('hostile-b', B);
      const bAgent = await agent('hostile-b-agent', B);
      // B's agent with A's identity; B's identity on A's agent; A's agent in B's identity
      const create = await api(
        t,
        'POST',
        '/v1/agents/',
        { name: 'x', identity_ids: [aIdentity.id] },
        B,
      );
      expect(create.status).toBe(400);
      expect(create.body.details.problems).toEqual([
        { path: 'identity_ids[0]', message: 'unknown identity id' },
      ]);
      expect(
        (
          await api(
            t,
            'PATCH',
            `/v1/agents/${bAgent.id}/identities/attach/${aIdentity.id}`,
            undefined,
            B,
          )
        ).status,
      ).toBe(404);
      expect(
        (
          await api(
            t,
            'PATCH',
            `/v1/agents/${aAgent.id}/identities/attach/${bIdentity.id}`,
            undefined,
            B,
          )
        ).status,
      ).toBe(404);
      const steal = await api(
        t,
        'PATCH',
        `/v1/identities/${bIdentity.id}`,
        { agent_ids: [aAgent.id] },
        B,
      );
      expect(steal.status).toBe(400);
      expect(
        (await api(t, 'GET', `/v1/agents/?identity_id=${aIdentity.id}`, undefined, B)).body,
      ).toEqual([]);
      expect(
        (await api(t, 'GET', '/v1/agents/?identifier_keys=hostile-a', undefined, B)).body,
      ).toEqual([]);
      expect(
        (await api(t, 'GET', `/v1/agents/${aAgent.id}`, undefined, A)).body.identity_ids,
      ).toEqual([aIdentity.id]);
    });
  });

  describe('include on retrieve and list', () => {
    it('none given: every relation; given: only those, the others empty but present', async () => {
      const i = await identity('inc');
      const a = await agent('includer', A, {
        identity_ids: [i.id],
        memory_blocks: [{ label: 'human', value: 'Ada' }],
      });
      const all = (await api(t, 'GET', `/v1/agents/${a.id}`, undefined, A)).body;
      expect(all.tools.length).toBeGreaterThan(0);
      expect(all.memory.blocks.map((b: any) => b.label)).toEqual(['human']);
      expect(all.tags).toEqual(['t1']);
      expect(all.identity_ids).toEqual([i.id]);

      const tools = (await api(t, 'GET', `/v1/agents/${a.id}?include=agent.tools`, undefined, A))
        .body;
      expect(tools.tools.length).toBe(all.tools.length);
      expect(tools).toMatchObject({
        memory: { blocks: [] },
        blocks: [],
        tags: [],
        identity_ids: [],
        identities: [],
        secrets: [],
        pending_approval: null,
        system: all.system,
        llm_config: all.llm_config,
      });
      const two = (
        await api(
          t,
          'GET',
          `/v1/agents/${a.id}?include=agent.blocks&include=agent.identities`,
          undefined,
          A,
        )
      ).body;
      expect([two.tools, two.memory.blocks.length, two.identity_ids]).toEqual([[], 1, [i.id]]);
      const legacy = (
        await api(t, 'GET', `/v1/agents/${a.id}?include_relationships=memory`, undefined, A)
      ).body;
      expect([legacy.tools, legacy.blocks.length]).toEqual([[], 1]);
      const listed = (
        await api(t, 'GET', `/v1/agents/?name=includer&include=agent.tags`, undefined, A)
      ).body;
      expect(listed[0]).toMatchObject({ tags: ['t1'], tools: [], memory: { blocks: [] } });
    });

    it('an unknown include value is 400 naming the allowed ones', async () => {
      const a = await agent('bad-include');
      const r = await api(t, 'GET', `/v1/agents/${a.id}?include=agent.passwords`, undefined, A);
      expect(r.status).toBe(400);
      expect(r.body.details.problems[0]).toMatchObject({
        path: 'include',
        message: expect.stringContaining('agent.tools'),
      });
      expect((await api(t, 'GET', '/v1/agents/?include=constructor', undefined, A)).status).toBe(
        400,
      );
      expect(
        (await api(t, 'GET', `/v1/agents/${a.id}?include_relationships=constructor`, undefined, A))
          .status,
      ).toBe(200);
    });
  });

  describe('agent secrets', () => {
    it("names only, never values; the agent's secrets are its tenant's alone", async () => {
      const a = await agent('secretive', A, { secrets: { API_TOKEN: 'tok-never-shown-42' } });
      expect(JSON.stringify(a)).not.toContain('tok-never-shown-42');
      const got = await api(t, 'GET', `/v1/agents/${a.id}?include=agent.secrets`, undefined, A);
      expect(JSON.stringify(got.body)).not.toContain('tok-never-shown-42');
      expect(got.body.secrets).toEqual([
        expect.objectContaining({ key: 'API_TOKEN', value: '[redacted]', agent_id: a.id }),
      ]);
      expect(got.body.tool_exec_environment_variables).toEqual(got.body.secrets);
      const names = await api(t, 'GET', `/v1/agents/${a.id}/secrets`, undefined, A);
      expect(names.body.map((s: any) => s.name)).toEqual(['API_TOKEN']);
      expect(JSON.stringify(names.body)).not.toContain('tok-never-shown-42');
      expect((await api(t, 'GET', `/v1/agents/${a.id}/secrets`, undefined, B)).status).toBe(404);
      const list = await api(t, 'GET', '/v1/agents/?name=secretive', undefined, A);
      expect(JSON.stringify(list.body)).not.toContain('tok-never-shown-42');
    });
  });
});
