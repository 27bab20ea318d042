/* eslint-disable @typescript-eslint/no-explicit-any */
import { DataSource } from 'typeorm';
import { AgentEntity } from '../../../src/agents/agent.entity';
import { startApp, TestApp } from '../../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';
import { api, say } from '../../support/processing-fixtures';

/** Model endpoints belong to the operator: no tenant can point the operator's key at a server of its own. */
describe('security: model endpoints', () => {
  const OPERATOR_KEY = 'sk-operator-0123456789';
  const PROXY_KEY = 'sk-proxy-abcdef';
  let t: TestApp;
  let operator: FakeModelServer; // the configured openai endpoint
  let proxy: FakeModelServer; // a second configured provider
  let attacker: FakeModelServer; // a server the tenant controls

  beforeAll(async () => {
    [operator, proxy, attacker] = await Promise.all([
      startFakeModelServer(),
      startFakeModelServer(),
      startFakeModelServer(),
    ]);
    t = await startApp({
      env: { OPENAI_API_KEY: OPERATOR_KEY, PROXY_KEY },
      overrides: {
        models: {
          openai: { base_url: operator.baseUrl },
          providers: [
            {
              name: 'myproxy',
              base_url: proxy.baseUrl,
              api_key_env: 'PROXY_KEY',
              models: ['llama-3'],
            },
          ],
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await Promise.all([operator.close(), proxy.close(), attacker.close()]);
  });
  beforeEach(() => [operator, proxy, attacker].forEach((f) => f.reset()));

  const create = (body: Record<string, unknown>) =>
    api(t, 'POST', '/v1/agents/', { name: `m-${Math.random().toString(36).slice(2)}`, ...body });

  it.each<[string, Record<string, unknown>, string]>([
    [
      'an agent whose model_endpoint is the tenant’s own server',
      {
        llm_config: { model: 'gpt-4o', model_endpoint_type: 'openai', model_endpoint: 'ATTACKER' },
      },
      'llm_config.model_endpoint',
    ],
    [
      'a handle plus a foreign model_endpoint',
      { model: 'openai/gpt-4o', llm_config: { model_endpoint: 'ATTACKER' } },
      'llm_config.model_endpoint',
    ],
    [
      'a configured provider name with a foreign model_endpoint',
      {
        llm_config: {
          model: 'llama-3',
          model_endpoint_type: 'openai',
          provider_name: 'myproxy',
          model_endpoint: 'ATTACKER',
        },
      },
      'llm_config.model_endpoint',
    ],
    [
      'a provider that is not configured',
      { llm_config: { model: 'x', model_endpoint_type: 'openai', provider_name: 'mine' } },
      'llm_config.provider_name',
    ],
    ['a handle naming an unknown provider', { model: 'attacker/gpt-4o' }, 'model'],
  ])('%s → 400, the server never sees the key', async (_attack, body, path) => {
    const withUrl = JSON.parse(JSON.stringify(body).replace('ATTACKER', attacker.baseUrl));
    const res = await create(withUrl);
    expect(res.status).toBe(400);
    expect(res.body.details.problems.map((p: any) => p.path)).toContain(path);
    expect(attacker.requests).toHaveLength(0);
  });

  it('an update to a foreign model_endpoint → 400, the agent keeps calling the operator endpoint', async () => {
    const id = (await create({ model: 'openai/gpt-4o-mini' })).body.id;
    const res = await api(t, 'PATCH', `/v1/agents/${id}`, {
      llm_config: { model_endpoint: attacker.baseUrl },
    });
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].path).toBe('llm_config.model_endpoint');
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('hi'));
    expect(attacker.requests).toHaveLength(0);
    expect(operator.requests[0].headers.authorization).toBe(`Bearer ${OPERATOR_KEY}`);
  });

  it('a stored agent with a foreign endpoint (from before the check) is refused at call time', async () => {
    const id = (await create({ model: 'openai/gpt-4o-mini' })).body.id;
    await t.app
      .get(DataSource)
      .createQueryBuilder()
      .update(AgentEntity)
      .set({
        llm_config: {
          model: 'gpt-4o',
          model_endpoint_type: 'openai',
          model_endpoint: attacker.baseUrl,
        },
      })
      .where('id = :id', { id })
      .execute();
    const res = await api(t, 'POST', `/v1/agents/${id}/messages`, say('hi'));
    expect(JSON.stringify(res.body)).not.toContain(OPERATOR_KEY);
    expect(attacker.requests).toHaveLength(0);
    expect(operator.requests).toHaveLength(0);
  });

  it('an agent picks a configured provider and model: myproxy/llama-3 goes to the proxy with its key', async () => {
    const created = await create({ model: 'myproxy/llama-3' });
    expect(created.status).toBe(200);
    expect(created.body.llm_config).toMatchObject({
      model: 'llama-3',
      model_endpoint: proxy.baseUrl,
      provider_name: 'myproxy',
    });
    expect(created.body.model).toBe('myproxy/llama-3');
    await api(t, 'POST', `/v1/agents/${created.body.id}/messages`, say('hi'));
    expect(proxy.requests[0].headers.authorization).toBe(`Bearer ${PROXY_KEY}`);
    expect(proxy.requests[0].model).toBe('llama-3');
    expect(operator.requests).toHaveLength(0);
  });

  it('model_endpoint equal to a configured base URL is accepted and pinned to that provider', async () => {
    const res = await create({
      llm_config: {
        model: 'llama-3',
        model_endpoint_type: 'openai',
        model_endpoint: `${proxy.baseUrl}/`,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.llm_config).toMatchObject({
      provider_name: 'myproxy',
      model_endpoint: proxy.baseUrl,
    });
  });

  it('no response carries a key', async () => {
    const id = (await create({ model: 'myproxy/llama-3' })).body.id;
    const read = JSON.stringify((await api(t, 'GET', `/v1/agents/${id}`)).body);
    expect(read).not.toContain(PROXY_KEY);
    expect(read).not.toContain(OPERATOR_KEY);
  });
});
