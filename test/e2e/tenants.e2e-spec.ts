import Letta from '@letta-ai/letta-client';
import { startApp, TestApp } from '../support/app-harness';

/** Keys map to tenants; one tenant never sees another's agents (404, not 403); bad keys are 401. */
describe('tenants', () => {
  let t: TestApp;
  const a = () => new Letta({ baseURL: t.baseUrl, apiKey: 'key-a', maxRetries: 0 });
  const b = () => new Letta({ baseURL: t.baseUrl, apiKey: 'key-b', maxRetries: 0 });

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: {
          api_keys: [
            { key: 'key-a', tenant: 'tenant-a' },
            { key: 'key-b', tenant: 'tenant-b' },
          ],
        },
      },
    });
  });
  afterAll(() => t.close());

  it("hides another tenant's agents and tools", async () => {
    const agent = await a().agents.create({ name: 'private', tags: ['t'] });
    await expect(b().agents.retrieve(agent.id)).rejects.toMatchObject({ status: 404 });
    await expect(b().agents.update(agent.id, { name: 'stolen' })).rejects.toMatchObject({
      status: 404,
    });
    await expect(b().agents.delete(agent.id)).rejects.toMatchObject({ status: 404 });
    expect((await b().agents.list()).getPaginatedItems()).toEqual([]);
    expect((await b().agents.list({ name: 'private' })).getPaginatedItems()).toEqual([]);
    expect((await b().agents.list({ tags: ['t'] })).getPaginatedItems()).toEqual([]);
    // Another tenant's agent id is no cursor either.
    const res = await fetch(`${t.baseUrl}/v1/agents/?after=${agent.id}`, {
      headers: { authorization: 'Bearer key-b' },
    });
    expect(res.status).toBe(400);
    expect((await a().agents.retrieve(agent.id)).name).toBe('private');

    const tool = await fetch(`${t.baseUrl}/v1/tools/`, {
      method: 'POST',
      headers: { authorization: 'Bearer key-a', 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'a_only',
        safety: 'read_only',
        kind: 'http',
        http: { url: 'http://127.0.0.1:9/x', method: 'POST' },
      }),
    });
    const { id } = (await tool.json()) as { id: string };
    const fromB = await fetch(`${t.baseUrl}/v1/tools/${id}`, {
      headers: { authorization: 'Bearer key-b' },
    });
    expect(fromB.status).toBe(404);
    await expect(b().agents.create({ tools: ['a_only'] })).rejects.toMatchObject({
      status: 400,
    });
    // The same name is free in another tenant.
    const sameName = await fetch(`${t.baseUrl}/v1/tools/`, {
      method: 'POST',
      headers: { authorization: 'Bearer key-b', 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'a_only',
        safety: 'read_only',
        kind: 'http',
        http: { url: 'http://127.0.0.1:9/y' },
      }),
    });
    expect(sameName.status).toBe(200);
  });

  it.each([
    ['no key', {}],
    ['wrong key', { authorization: 'Bearer nope' }],
    ['empty bearer', { authorization: 'Bearer ' }],
  ])('%s → 401', async (_n, headers: Record<string, string>) => {
    const res = await fetch(`${t.baseUrl}/v1/agents/`, { headers });
    expect(res.status).toBe(401);
    expect(await res.json()).toEqual({
      code: 'UNAUTHORIZED',
      message: expect.any(String),
      details: {},
    });
  });

  it('the SDK with a wrong key gets 401', async () => {
    const c = new Letta({ baseURL: t.baseUrl, apiKey: 'bad', maxRetries: 0 });
    await expect(c.agents.list()).rejects.toMatchObject({ status: 401 });
  });

  it('reads keys from API_KEYS too', async () => {
    const t2 = await startApp({ env: { API_KEYS: 'k1:one,k2:two' } });
    try {
      const one = new Letta({ baseURL: t2.baseUrl, apiKey: 'k1', maxRetries: 0 });
      const two = new Letta({ baseURL: t2.baseUrl, apiKey: 'k2', maxRetries: 0 });
      const agent = await one.agents.create({ name: 'x' });
      await expect(two.agents.retrieve(agent.id)).rejects.toMatchObject({ status: 404 });
    } finally {
      await t2.close();
    }
  });
});
