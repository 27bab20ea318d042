/* eslint-disable @typescript-eslint/no-explicit-any */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { TenantSecretEntity } from '../../../src/secrets/tenant-secret.entity';
import { startApp, TestApp } from '../../support/app-harness';
import { FakeModelServer, startFakeModelServer } from '../../support/fake-model-server';
import { api, say } from '../../support/processing-fixtures';

/** Secrets are tenant-owned and explicit: `${NAME}` never reaches the operator's environment or another tenant. */
describe('security: secrets', () => {
  const OPERATOR_KEY = 'sk-operator-must-never-leave';
  const A = { authorization: 'Bearer key-a' };
  const B = { authorization: 'Bearer key-b' };
  let t: TestApp;
  let fake: FakeModelServer;
  let server: Server;
  let url: string;
  /** Every request the tenants' tool server saw, raw (headers and body). */
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(JSON.stringify(req.headers) + body);
        res.end('ok');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    fake = await startFakeModelServer();
    t = await startApp({
      env: { OPENAI_API_KEY: OPERATOR_KEY, SHARED_REGION: 'eu-west-1' },
      overrides: {
        auth: {
          api_keys: [
            { key: 'key-a', tenant: 'tenant-a' },
            { key: 'key-b', tenant: 'tenant-b' },
          ],
        },
        tools: { http: { env_allowlist: ['SHARED_REGION'] } },
        models: {
          providers: [
            { name: 'byok', base_url: fake.baseUrl, api_key_secret: 'MY_MODEL_KEY', models: ['m'] },
          ],
        },
      },
    });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  beforeEach(() => {
    seen.length = 0;
    fake.reset();
  });

  const tool = (name: string, headers: Record<string, string>) => ({
    name,
    description: 'calls the tenant’s server',
    safety: 'read_only',
    kind: 'http',
    parameters: { type: 'object', properties: {} },
    http: { url: `${url}/${name}`, method: 'POST', headers },
  });

  /** An agent of the tenant whose scripted model calls `toolName` once. */
  async function callTool(as: Record<string, string>, toolName: string): Promise<any> {
    const agent = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name: `s-${Math.random().toString(36).slice(2)}`,
        tools: [toolName],
        include_base_tools: false,
        model_script: [{ tool_calls: [{ name: toolName, arguments: {} }] }],
      },
      as,
    );
    expect(agent.status).toBe(200);
    return (await api(t, 'POST', `/v1/agents/${agent.body.id}/messages`, say('go'), as)).body;
  }

  it.each(['OPENAI_API_KEY', 'API_KEYS', 'PATH', 'SECRETS_ENCRYPTION_KEY'])(
    'tenant B declares a header ${%s} → 400 naming the variable; the tool server never sees it',
    async (variable) => {
      const res = await api(
        t,
        'POST',
        '/v1/tools/',
        tool('steal', { 'X-Steal': `\${${variable}}` }),
        B,
      );
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_FAILED');
      expect(res.body.details.problems[0]).toMatchObject({ path: 'http.headers.X-Steal' });
      expect(res.body.message).toContain(`\${${variable}}`);
      expect(seen).toHaveLength(0);
      expect(JSON.stringify(res.body)).not.toContain(OPERATOR_KEY);
    },
  );

  it('tenant A’s secret never reaches tenant B: B cannot name it, and each tenant’s call carries its own value', async () => {
    expect((await api(t, 'PUT', '/v1/secrets/TOKEN', { value: 'a-secret-value' }, A)).status).toBe(
      200,
    );
    // B has no TOKEN: declaring it is refused
    const refused = await api(
      t,
      'POST',
      '/v1/tools/',
      tool('b_tool', { 'X-Token': '${TOKEN}' }),
      B,
    );
    expect(refused.status).toBe(400);
    // B sets its own, then both declare and call
    expect((await api(t, 'PUT', '/v1/secrets/TOKEN', { value: 'b-secret-value' }, B)).status).toBe(
      200,
    );
    expect(
      (await api(t, 'POST', '/v1/tools/', tool('a_tool', { 'X-Token': '${TOKEN}' }), A)).status,
    ).toBe(200);
    expect(
      (await api(t, 'POST', '/v1/tools/', tool('b_tool', { 'X-Token': '${TOKEN}' }), B)).status,
    ).toBe(200);
    await callTool(A, 'a_tool');
    await callTool(B, 'b_tool');
    expect(seen).toHaveLength(2);
    expect(seen[0]).toContain('a-secret-value');
    expect(seen[1]).toContain('b-secret-value');
    expect(seen[1]).not.toContain('a-secret-value');
    // B lists only its own names, and never a value
    const listed = await api(t, 'GET', '/v1/secrets', undefined, B);
    expect(listed.body.map((s: any) => s.name)).toEqual(['TOKEN']);
    expect(JSON.stringify(listed.body)).not.toContain('secret-value');
  });

  it('no response carries a value: PUT, list, the tool, the agent’s history', async () => {
    const put = await api(t, 'PUT', '/v1/secrets/HIDDEN', { value: 'hidden-value-123' }, A);
    expect(put.body).toEqual({
      name: 'HIDDEN',
      source: 'api',
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    await api(
      t,
      'POST',
      '/v1/tools/',
      tool('hidden_tool', { Authorization: 'Bearer ${HIDDEN}' }),
      A,
    );
    const reply = await callTool(A, 'hidden_tool');
    expect(seen[0]).toContain('hidden-value-123');
    const everything = [
      put.body,
      (await api(t, 'GET', '/v1/secrets', undefined, A)).body,
      (await api(t, 'GET', '/v1/tools/', undefined, A)).body,
      reply,
    ];
    expect(JSON.stringify(everything)).not.toContain('hidden-value-123');
  });

  // QA: a URL's user and password were stored and answered as they are (GET /v1/tools, an agent file
  // export), where literal header values are [redacted]; an operator's tool showed its to every tenant
  it.each<[string, string]>([
    ['a user and password', 'http://svc:url-password-1@127.0.0.1:9/x'],
    ['a user alone', 'http://url-token-1@127.0.0.1:9/x'],
  ])(
    'a tool URL carrying %s → 400 at http.url (create, upsert, patch, import); nothing stores it',
    async (_what, withCredentials) => {
      const decl = { ...tool('creds', {}), http: { url: withCredentials, method: 'POST' } };
      const created = await api(t, 'POST', '/v1/tools/', decl, B);
      expect(created).toMatchObject({ status: 400, body: { code: 'VALIDATION_FAILED' } });
      expect(created.body.details.problems).toEqual([
        { path: 'http.url', message: expect.stringContaining('credentials') },
      ]);
      expect((await api(t, 'PUT', '/v1/tools/', decl, B)).status).toBe(400);
      const plain = await api(t, 'POST', '/v1/tools/', tool('creds_later', {}), B);
      const patched = await api(
        t,
        'PATCH',
        `/v1/tools/${plain.body.id}`,
        { http: { url: withCredentials } },
        B,
      );
      expect(patched.status).toBe(400);
      const file = {
        agents: [{ id: 'agent-0', name: 'importer', system: 's', tool_ids: ['tool-0'] }],
        tools: [{ id: 'tool-0', ...decl }],
        blocks: [],
      };
      const form = new FormData();
      form.append('file', new Blob([JSON.stringify(file)]), 'creds.af');
      const imported = await fetch(`${t.baseUrl}/v1/agents/import`, {
        method: 'POST',
        headers: B,
        body: form,
      });
      expect(imported.status).toBe(400);
      const everything = JSON.stringify((await api(t, 'GET', '/v1/tools/', undefined, B)).body);
      expect(everything).not.toMatch(/url-(password|token)-1/);
      await api(t, 'DELETE', `/v1/tools/${plain.body.id}`, undefined, B);
    },
  );

  it('values are encrypted at rest', async () => {
    await api(t, 'PUT', '/v1/secrets/AT_REST', { value: 'plain-text-never-stored' }, A);
    const rows = await t.app.get(DataSource).getRepository(TenantSecretEntity).find();
    expect(rows.length).toBeGreaterThan(0);
    expect(JSON.stringify(rows)).not.toContain('plain-text-never-stored');
  });

  it('an allow-listed environment variable resolves for every tenant; nothing else of the environment does', async () => {
    const res = await api(
      t,
      'POST',
      '/v1/tools/',
      tool('region', { 'X-Region': '${SHARED_REGION}' }),
      B,
    );
    expect(res.status).toBe(200);
    await callTool(B, 'region');
    expect(seen[0]).toContain('eu-west-1');
  });

  it.each<[string, unknown, string]>([
    ['a value with a line break (header injection)', { value: 'x\r\nX-Evil: 1' }, 'value'],
    ['no value', {}, 'value'],
    ['a value over secrets.max_value_bytes', { value: 'v'.repeat(8193) }, 'value'],
  ])('PUT with %s → 400, without echoing the value', async (_what, body, p) => {
    const res = await api(t, 'PUT', '/v1/secrets/BAD', body, A);
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].path).toBe(p);
    expect(JSON.stringify(res.body)).not.toContain('X-Evil');
  });

  it('a bad name is 400; deleting twice is 404 the second time', async () => {
    expect((await api(t, 'PUT', '/v1/secrets/1BAD', { value: 'v' }, A)).status).toBe(400);
    await api(t, 'PUT', '/v1/secrets/GONE', { value: 'v' }, A);
    expect((await api(t, 'DELETE', '/v1/secrets/GONE', undefined, A)).status).toBe(200);
    const again = await api(t, 'DELETE', '/v1/secrets/GONE', undefined, A);
    expect(again.status).toBe(404);
    expect(again.body.code).toBe('SECRET_NOT_FOUND');
  });

  it('Letta’s agent-level secrets map onto the store: the agent’s own value wins for its calls, names only are shown', async () => {
    await api(t, 'PUT', '/v1/secrets/AGENT_TOKEN', { value: 'tenant-wide-value' }, A);
    await api(t, 'POST', '/v1/tools/', tool('agent_tool', { 'X-Token': '${AGENT_TOKEN}' }), A);
    const created = await api(
      t,
      'POST',
      '/v1/agents/',
      {
        name: 'with-secrets',
        tools: ['agent_tool'],
        include_base_tools: false,
        secrets: { AGENT_TOKEN: 'agent-own-value' },
        model_script: [{ tool_calls: [{ name: 'agent_tool', arguments: {} }] }],
      },
      A,
    );
    expect(created.status).toBe(200);
    expect(JSON.stringify(created.body)).not.toContain('agent-own-value');
    const id = created.body.id;
    await api(t, 'POST', `/v1/agents/${id}/messages`, say('go'), A);
    expect(seen[0]).toContain('agent-own-value');
    const names = await api(t, 'GET', `/v1/agents/${id}/secrets`, undefined, A);
    expect(names.body.map((x: any) => x.name)).toEqual(['AGENT_TOKEN']);
    expect(JSON.stringify(names.body)).not.toContain('value-');
    expect((await api(t, 'GET', `/v1/agents/${id}/secrets`, undefined, B)).status).toBe(404);
    // Letta's list form on update replaces the agent's set
    const updated = await api(
      t,
      'PATCH',
      `/v1/agents/${id}`,
      { tool_exec_environment_variables: [{ key: 'OTHER', value: 'x1' }] },
      A,
    );
    expect(updated.status).toBe(200);
    const after = await api(t, 'GET', `/v1/agents/${id}/secrets`, undefined, A);
    expect(after.body.map((x: any) => x.name)).toEqual(['OTHER']);
    const bad = await api(t, 'PATCH', `/v1/agents/${id}`, { secrets: { '1X': 'v' } }, A);
    expect(bad.status).toBe(400);
    expect(bad.body.details.problems[0].path).toBe('secrets.1X');
  });

  it('agent secrets past the tenant’s quota: 409 QUOTA_EXCEEDED and nothing written (no agent, no patch, no secret)', async () => {
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`S${i}`, 'v']));
    const refused = await api(t, 'POST', '/v1/agents/', { name: 'over-bound', secrets: many }, B);
    expect([refused.status, refused.body.code]).toEqual([409, 'QUOTA_EXCEEDED']);
    expect(refused.body.details).toMatchObject({ quota: 'secrets', limit: 100 });
    expect((await api(t, 'GET', '/v1/agents/?name=over-bound', undefined, B)).body).toEqual([]);
    const id = (await api(t, 'POST', '/v1/agents/', { name: 'bounded', secrets: { KEEP: 'v' } }, B))
      .body.id;
    const patch = await api(
      t,
      'PATCH',
      `/v1/agents/${id}`,
      { description: 'changed', secrets: many },
      B,
    );
    expect([patch.status, patch.body.code]).toEqual([409, 'QUOTA_EXCEEDED']);
    expect(
      (await api(t, 'GET', `/v1/agents/${id}`, undefined, B)).body.description ?? null,
    ).not.toBe('changed');
    const names = await api(t, 'GET', `/v1/agents/${id}/secrets`, undefined, B);
    expect(names.body.map((x: any) => x.name)).toEqual(['KEEP']);
    expect((await api(t, 'PUT', '/v1/secrets/AFTER', { value: 'v' }, B)).status).toBe(200);
  });

  it('a tenant brings its own model key: a provider with api_key_secret uses the calling tenant’s secret only', async () => {
    await api(t, 'PUT', '/v1/secrets/MY_MODEL_KEY', { value: 'sk-tenant-a-own' }, A);
    const agentOf = async (as: Record<string, string>) =>
      (await api(t, 'POST', '/v1/agents/', { name: `byok-${Math.random()}`, model: 'byok/m' }, as))
        .body.id;
    const a = await agentOf(A);
    const b = await agentOf(B);
    await api(t, 'POST', `/v1/agents/${a}/messages`, say('hi'), A);
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual(['Bearer sk-tenant-a-own']);
    const failed = (await api(t, 'POST', `/v1/agents/${b}/messages`, say('hi'), B)).body;
    expect(failed.details).toMatchObject({ stop_reason: 'llm_api_error', error_type: 'llm_error' });
    const run = (await api(t, 'GET', `/v1/runs/${failed.details.run_id}`, undefined, B)).body;
    expect(JSON.stringify(run)).toContain('MY_MODEL_KEY');
    expect(JSON.stringify([failed, run])).not.toContain('sk-tenant-a-own');
    expect(fake.requests).toHaveLength(1); // B's call never left
  });
});

describe('security: secrets in tool files', () => {
  it('a tool file naming an environment variable that is not allow-listed stops the boot, naming it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'secrets-file-'));
    try {
      mkdirSync(path.join(dir, 'tools'));
      writeFileSync(
        path.join(dir, 'tools', 'leak.yaml'),
        [
          'name: leak',
          'safety: read_only',
          'kind: http',
          'http: { url: "http://127.0.0.1:9/x", headers: { X-Key: "${OPENAI_API_KEY}" } }',
        ].join('\n'),
      );
      await expect(startApp({ dir, env: { OPENAI_API_KEY: 'sk-x' } })).rejects.toThrow(
        /leak\.yaml: leak: http\.headers\.X-Key names \$\{OPENAI_API_KEY\}/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('security: credentials in tool file URLs', () => {
  // QA: tenant B's GET /v1/tools showed http://svc:operator-password@… of the operator's tool file
  it('a tool file whose URL carries a password (every tenant reads tool URLs) stops the boot, naming file and field', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'url-creds-'));
    try {
      mkdirSync(path.join(dir, 'tools'));
      writeFileSync(
        path.join(dir, 'tools', 'billing.yaml'),
        [
          'name: billing',
          'safety: read_only',
          'kind: http',
          'http: { url: "http://svc:operator-password@127.0.0.1:9/x" }',
        ].join('\n'),
      );
      const started = startApp({
        dir,
        overrides: { auth: { api_keys: [{ key: 'key-b', tenant: 'tenant-b' }] } },
      });
      const outcome = await started.then(
        async (t) => {
          const listed = await api(t, 'GET', '/v1/tools/', undefined, {
            authorization: 'Bearer key-b',
          });
          await t.close();
          return JSON.stringify(listed.body);
        },
        (e: Error) => e.message,
      );
      expect(outcome).not.toContain('operator-password');
      expect(outcome).toMatch(/billing\.yaml.*http\.url.*credentials/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('security: the secrets key', () => {
  const put = (t: TestApp) => api(t, 'PUT', '/v1/secrets/TOKEN', { value: 'v-1' });

  it('on SQLite with none configured, one is generated beside the database (0600) and kept across restarts; on PostgreSQL none is: 409', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'secrets-key-'));
    const keyless = { dir, keepDir: true, env: { SECRETS_ENCRYPTION_KEY: '' } };
    try {
      let t = await startApp(keyless);
      const file = `${t.config.database.sqlite_path}.secrets-key`;
      if (t.config.database.url) {
        // instances must share one key: the operator sets it
        expect((await put(t)).status).toBe(409);
        expect(existsSync(file)).toBe(false);
        await t.close();
        return;
      }
      expect((await put(t)).status).toBe(200);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const key = readFileSync(file, 'utf8');
      await t.close();
      t = await startApp(keyless);
      expect(readFileSync(file, 'utf8')).toBe(key);
      const rows = await t.app.get(DataSource).getRepository(TenantSecretEntity).find();
      expect(rows.map((r) => r.name)).toEqual(['TOKEN']);
      expect(JSON.stringify(rows)).not.toContain('v-1');
      await t.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with generation off and no key, secrets cannot be stored: 409 SECRETS_NOT_CONFIGURED', async () => {
    const t = await startApp({
      env: { SECRETS_ENCRYPTION_KEY: '' },
      overrides: { secrets: { generate_key_file: false } },
    });
    try {
      const res = await put(t);
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('SECRETS_NOT_CONFIGURED');
    } finally {
      await t.close();
    }
  });
});
