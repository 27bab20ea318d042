/* eslint-disable @typescript-eslint/no-explicit-any */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startApp, TestApp } from '../support/app-harness';
import { api, say, startToolServer, ToolServer } from '../support/processing-fixtures';

/** Letta's tools.upsert / update, add-base-tools and agents.tools.run, tenant by tenant. */
describe('tools API: upsert, update, run', () => {
  const A = { authorization: 'Bearer key-a' };
  const B = { authorization: 'Bearer key-b' };
  let t: TestApp;
  let tools: ToolServer;
  let dir: string;

  const decl = (name: string, over: Record<string, unknown> = {}) => ({
    name,
    description: `test tool ${name}`,
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    safety: 'read_only',
    kind: 'http',
    http: { url: `${tools.baseUrl}/tool/${name}`, method: 'POST' },
    ...over,
  });
  const agentWith = async (name: string, extra: Record<string, unknown>, who = A) => {
    const r = await api(
      t,
      'POST',
      '/v1/agents/',
      { name, model: 'scripted/default', include_base_tools: false, ...extra },
      who,
    );
    expect(r.status).toBe(200);
    return r.body.id as string;
  };

  beforeAll(async () => {
    tools = await startToolServer();
    dir = mkdtempSync(path.join(tmpdir(), 'tools-api-'));
    mkdirSync(path.join(dir, 'tools'));
    writeFileSync(
      path.join(dir, 'tools', 'shared.yaml'),
      [
        'name: shared_lookup',
        'description: a file tool',
        'safety: read_only',
        'kind: http',
        'http: { url: "http://127.0.0.1:9/x" }',
      ].join('\n'),
    );
    t = await startApp({
      dir,
      keepDir: true,
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
  afterAll(async () => {
    await t.close();
    await tools.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(() => {
    tools.calls.length = 0;
  });

  describe('PUT /v1/tools/ (upsert by name within the tenant)', () => {
    it('creates, then replaces the same tool (same id, new fields)', async () => {
      const first = await api(t, 'PUT', '/v1/tools/', decl('up_one'), A);
      expect(first.status).toBe(200);
      const again = await api(
        t,
        'PUT',
        '/v1/tools/',
        decl('up_one', { description: 'second version', safety: 'side_effecting' }),
        A,
      );
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({
        id: first.body.id,
        description: 'second version',
        safety: 'side_effecting',
        source: 'api',
      });
      expect(
        (await api(t, 'GET', `/v1/tools/${first.body.id}`, undefined, A)).body.description,
      ).toBe('second version');
    });

    it("as Letta's upsert, fields absent or null keep the tool's; http given replaces it whole", async () => {
      const first = await api(
        t,
        'PUT',
        '/v1/tools/',
        decl('up_keep', {
          tags: ['ops'],
          return_char_limit: 500,
          default_requires_approval: true,
          http: { url: `${tools.baseUrl}/tool/up_keep`, method: 'PUT', timeout_ms: 1500 },
        }),
        A,
      );
      expect(first.status).toBe(200);
      const again = await api(
        t,
        'PUT',
        '/v1/tools/',
        {
          name: 'up_keep',
          description: null,
          tags: null,
          default_requires_approval: null,
          safety: 'side_effecting',
          http: { url: `${tools.baseUrl}/tool/up_keep2` },
        },
        A,
      );
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({
        id: first.body.id,
        description: 'test tool up_keep',
        tags: ['ops'],
        return_char_limit: 500,
        default_requires_approval: true,
        args_json_schema: { type: 'object', properties: { q: { type: 'string' } } },
        safety: 'side_effecting',
        http: { url: `${tools.baseUrl}/tool/up_keep2`, method: 'POST' },
      });
      expect(again.body.http.timeout_ms).toBeUndefined();
    });

    it("creating with Letta's nullable fields null (POST and PUT): null is the default", async () => {
      const nulls = {
        description: null,
        parameters: null,
        tags: null,
        return_char_limit: null,
        default_requires_approval: null,
        json_schema: null,
        args_json_schema: null,
        source_code: null,
        pip_requirements: null,
        npm_requirements: null,
        enable_parallel_execution: null,
      };
      for (const [method, name] of [
        ['POST', 'null_post'],
        ['PUT', 'null_put'],
      ] as const) {
        const r = await api(t, method, '/v1/tools/', decl(name, nulls), A);
        expect(r.status).toBe(200);
        expect(r.body).toMatchObject({
          name,
          description: '',
          args_json_schema: { type: 'object', properties: {} },
          tags: [],
          default_requires_approval: null,
        });
      }
    });

    it("another tenant's upsert of the same name makes its own tool and leaves A's alone", async () => {
      const a = await api(t, 'PUT', '/v1/tools/', decl('up_two'), A);
      const b = await api(t, 'PUT', '/v1/tools/', decl('up_two', { description: 'B' }), B);
      expect(b.status).toBe(200);
      expect(b.body.id).not.toBe(a.body.id);
      expect((await api(t, 'GET', `/v1/tools/${a.body.id}`, undefined, A)).body.description).toBe(
        'test tool up_two',
      );
      expect((await api(t, 'GET', `/v1/tools/${a.body.id}`, undefined, B)).status).toBe(404);
    });

    it('a built-in or file tool name is 409 TOOL_READ_ONLY', async () => {
      for (const name of ['send_message', 'shared_lookup']) {
        const r = await api(t, 'PUT', '/v1/tools/', decl(name), A);
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('TOOL_READ_ONLY');
      }
    });

    it('source_code (a Letta Python tool) is one 400 naming the supported kinds', async () => {
      const r = await api(t, 'PUT', '/v1/tools/', { source_code: 'def f(): pass' }, A);
      expect(r.status).toBe(400);
      expect(r.body.details.problems).toEqual([
        { path: 'source_code', message: expect.stringMatching(/http tool.*MCP server/) },
      ]);
    });

    it('bounds: an over-long name and a non-object body are 400', async () => {
      expect((await api(t, 'PUT', '/v1/tools/', decl('x'.repeat(65)), A)).status).toBe(400);
      expect((await api(t, 'PUT', '/v1/tools/', [1, 2], A)).status).toBe(400);
    });
  });

  describe('PATCH /v1/tools/{id}', () => {
    it('changes the given fields; http merges key by key; Letta json_schema is read', async () => {
      const created = await api(
        t,
        'POST',
        '/v1/tools/',
        decl('patch_me', { http: { url: `${tools.baseUrl}/tool/patch_me`, timeout_ms: 1500 } }),
        A,
      );
      const r = await api(
        t,
        'PATCH',
        `/v1/tools/${created.body.id}`,
        {
          description: 'patched',
          http: { method: 'PUT' },
          json_schema: { parameters: { type: 'object', properties: { n: { type: 'integer' } } } },
        },
        A,
      );
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        id: created.body.id,
        name: 'patch_me',
        description: 'patched',
        http: { url: `${tools.baseUrl}/tool/patch_me`, method: 'PUT', timeout_ms: 1500 },
        args_json_schema: { type: 'object', properties: { n: { type: 'integer' } } },
      });
    });

    it("another tenant's tool is 404; built-in and file tools are 409 TOOL_READ_ONLY", async () => {
      const mine = await api(t, 'POST', '/v1/tools/', decl('patch_private'), A);
      expect(
        (await api(t, 'PATCH', `/v1/tools/${mine.body.id}`, { description: 'x' }, B)).status,
      ).toBe(404);
      const listed = (await api(t, 'GET', '/v1/tools/', undefined, A)).body as any[];
      for (const name of ['send_message', 'shared_lookup']) {
        const id = listed.find((x) => x.name === name).id;
        const r = await api(t, 'PATCH', `/v1/tools/${id}`, { description: 'x' }, A);
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('TOOL_READ_ONLY');
      }
    });

    it('bad values are 400 with their paths; source_code is refused', async () => {
      const mine = await api(t, 'POST', '/v1/tools/', decl('patch_bad'), A);
      const r = await api(
        t,
        'PATCH',
        `/v1/tools/${mine.body.id}`,
        { safety: 'careful', http: { url: 'ftp://x' } },
        A,
      );
      expect(r.status).toBe(400);
      expect(r.body.details.problems.map((p: any) => p.path).sort()).toEqual([
        'http.url',
        'safety',
      ]);
      const code = await api(t, 'PATCH', `/v1/tools/${mine.body.id}`, { source_code: 'x' }, A);
      expect(code.status).toBe(400);
    });

    it('renaming a tool agents use is 409 TOOL_IN_USE; an unused one renames', async () => {
      const used = await api(t, 'POST', '/v1/tools/', decl('rename_used'), A);
      const agentId = await agentWith('uses-rename', { tools: ['rename_used'] });
      const r = await api(t, 'PATCH', `/v1/tools/${used.body.id}`, { name: 'renamed' }, A);
      expect(r.status).toBe(409);
      expect(r.body).toMatchObject({ code: 'TOOL_IN_USE', details: { agent_ids: [agentId] } });
      // B's agent using a tool of the same name does not count for A, nor the other way round
      const free = await api(t, 'POST', '/v1/tools/', decl('rename_free'), A);
      await api(t, 'POST', '/v1/tools/', decl('rename_free'), B);
      await agentWith('b-uses', { tools: ['rename_free'] }, B);
      const ok = await api(t, 'PATCH', `/v1/tools/${free.body.id}`, { name: 'renamed_free' }, A);
      expect(ok.status).toBe(200);
      expect(ok.body.name).toBe('renamed_free');
      const taken = await api(t, 'PATCH', `/v1/tools/${free.body.id}`, { name: 'send_message' }, A);
      expect(taken.body.code).toBe('TOOL_EXISTS');
    });

    it("parameters that no longer accept an agent's run_first arguments are 409 TOOL_RULES_CONFLICT", async () => {
      const tool = await api(t, 'POST', '/v1/tools/', decl('first_tool'), A);
      const agentId = await agentWith('starts-first', {
        tools: ['first_tool'],
        tool_rules: [{ type: 'run_first', tool_name: 'first_tool', args: { q: 'hello' } }],
      });
      const r = await api(
        t,
        'PATCH',
        `/v1/tools/${tool.body.id}`,
        { parameters: { type: 'object', properties: { q: { type: 'integer' } } } },
        A,
      );
      expect(r.status).toBe(409);
      expect(r.body.code).toBe('TOOL_RULES_CONFLICT');
      expect(r.body.details.problems[0].path).toBe(`agents.${agentId}.tool_rules[0].args`);
      // still the old declaration
      expect(
        (await api(t, 'GET', `/v1/tools/${tool.body.id}`, undefined, A)).body.args_json_schema,
      ).toEqual({ type: 'object', properties: { q: { type: 'string' } } });
    });

    it("an agent's next call uses the updated declaration", async () => {
      const tool = await api(t, 'POST', '/v1/tools/', decl('moving'), A);
      const agentId = await agentWith('mover', { tools: ['moving'] });
      await api(
        t,
        'PATCH',
        `/v1/tools/${tool.body.id}`,
        { http: { url: `${tools.baseUrl}/tool/moved` } },
        A,
      );
      const r = await api(t, 'POST', `/v1/agents/${agentId}/tools/moving/run`, { args: {} }, A);
      expect(r.body.func_return).toBe('ok:moved');
    });
  });

  it('POST /v1/tools/add-base-tools is idempotent: the same built-ins each time', async () => {
    const one = await api(t, 'POST', '/v1/tools/add-base-tools', undefined, A);
    const two = await api(t, 'POST', '/v1/tools/add-base-tools', undefined, A);
    expect(one.status).toBe(200);
    expect(two.body).toEqual(one.body);
    expect(one.body.map((x: any) => x.name)).toContain('send_message');
  });

  describe('POST /v1/agents/{id}/tools/{name}/run', () => {
    it("runs an attached tool with the arguments and answers Letta's ToolExecutionResult", async () => {
      await api(t, 'POST', '/v1/tools/', decl('run_plain'), A);
      const agentId = await agentWith('runner', { tools: ['run_plain'] });
      const r = await api(
        t,
        'POST',
        `/v1/agents/${agentId}/tools/run_plain/run`,
        { args: { q: 'x' } },
        A,
      );
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({
        status: 'success',
        func_return: 'ok:run_plain',
        stderr: [],
        outcome: 'executed',
        error: null,
      });
      expect(tools.calls).toEqual([
        { name: 'run_plain', arguments: { q: 'x' }, tool_call_id: r.body.tool_call_id },
      ]);
    });

    it("another tenant's agent, a tool not attached and a malformed id are 404; bad args are 400", async () => {
      await api(t, 'POST', '/v1/tools/', decl('run_private'), A);
      const agentId = await agentWith('private-runner', { tools: ['run_private'] });
      const other = await api(t, 'POST', `/v1/agents/${agentId}/tools/run_private/run`, {}, B);
      expect(other.status).toBe(404);
      const unattached = await api(t, 'POST', `/v1/agents/${agentId}/tools/run_plain/run`, {}, A);
      expect(unattached.status).toBe(404);
      expect(unattached.body.code).toBe('TOOL_NOT_ATTACHED');
      expect((await api(t, 'POST', '/v1/agents/nope/tools/run_private/run', {}, A)).status).toBe(
        404,
      );
      const bad = await api(
        t,
        'POST',
        `/v1/agents/${agentId}/tools/run_private/run`,
        { args: [1] },
        A,
      );
      expect(bad.status).toBe(400);
      expect(bad.body.details.problems[0].path).toBe('args');
      const badSchema = await api(
        t,
        'POST',
        `/v1/agents/${agentId}/tools/run_private/run`,
        { args: { q: 5 } },
        A,
      );
      expect(badSchema.body).toMatchObject({
        status: 'error',
        outcome: 'refused',
        func_return: null,
      });
      expect(badSchema.body.error.type).toBe('InvalidArguments');
      expect(tools.calls).toEqual([]);
    });

    it('the rules apply: a cooldown refuses the second run (status error, the reason in stderr)', async () => {
      await api(t, 'POST', '/v1/tools/', decl('run_cool', { safety: 'side_effecting' }), A);
      const agentId = await agentWith('cooler', {
        tools: ['run_cool'],
        tool_rules: [{ type: 'cooldown', tool_name: 'run_cool', seconds: 600 }],
      });
      const url = `/v1/agents/${agentId}/tools/run_cool/run`;
      expect((await api(t, 'POST', url, { args: { q: '1' } }, A)).body.status).toBe('success');
      const second = await api(t, 'POST', url, { args: { q: '2' } }, A);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ status: 'error', outcome: 'refused', func_return: null });
      expect(second.body.stderr[0]).toMatch(/cooling down/);
      expect(tools.calls.map((c) => c.arguments.q)).toEqual(['1']);
    });

    it('a tool that needs consent is 409 CONSENT_REQUIRED: nothing runs, no one is asked', async () => {
      await api(t, 'POST', '/v1/tools/', decl('run_pay', { safety: 'side_effecting' }), A);
      const agentId = await agentWith('payer', {
        tools: ['run_pay'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'run_pay' }],
      });
      const r = await api(t, 'POST', `/v1/agents/${agentId}/tools/run_pay/run`, { args: {} }, A);
      expect(r.status).toBe(409);
      expect(r.body.code).toBe('CONSENT_REQUIRED');
      expect(tools.calls).toEqual([]);
      const pending = await api(t, 'GET', '/v1/consent/requests?status=pending', undefined, A);
      expect(pending.body.filter((x: any) => x.agent_id === agentId)).toEqual([]);
    });

    it('under a standing grant the consent tool runs, and the grant is named', async () => {
      await api(t, 'POST', '/v1/tools/', decl('run_granted', { safety: 'side_effecting' }), A);
      const agentId = await agentWith('granted', {
        tools: ['run_granted'],
        tool_rules: [{ type: 'requires_approval', tool_name: 'run_granted' }],
        model_script: [{ tool_calls: [{ name: 'run_granted', arguments: { q: 'chat' } }] }],
      });
      const parked = await api(t, 'POST', `/v1/agents/${agentId}/messages`, say('go'), A);
      expect(parked.body.stop_reason.stop_reason).toBe('requires_approval');
      const pending = await api(t, 'GET', '/v1/consent/requests?status=pending', undefined, A);
      const request = pending.body.find((x: any) => x.agent_id === agentId);
      const decided = await api(
        t,
        'POST',
        `/v1/consent/requests/${request.id}/decision`,
        { decision: 'approve_for_duration', seconds: 600 },
        A,
      );
      expect(decided.status).toBe(200);
      const r = await api(
        t,
        'POST',
        `/v1/agents/${agentId}/tools/run_granted/run`,
        { args: { q: 'direct' } },
        A,
      );
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ status: 'success', grant_id: expect.any(String) });
      expect(tools.calls.map((c) => c.arguments.q)).toContain('direct');
    });
  });
});

describe('tool files are strict', () => {
  it('an unknown key stops the boot, with a suggestion', async () => {
    const bad = mkdtempSync(path.join(tmpdir(), 'tools-strict-'));
    try {
      mkdirSync(path.join(bad, 'tools'));
      writeFileSync(
        path.join(bad, 'tools', 'typo.yaml'),
        [
          'tools:',
          '  - name: typo',
          '    saftey: read_only',
          '    safety: read_only',
          '    kind: http',
          '    http: { url: "http://127.0.0.1:9", timout_ms: 5 }',
        ].join('\n'),
      );
      await expect(startApp({ dir: bad })).rejects.toThrow(
        /typo\.yaml: tools\[0\]\.saftey: unknown key \(did you mean "safety"\?\); tools\[0\]\.http\.timout_ms: unknown key \(did you mean "timeout_ms"\?\)/,
      );
    } finally {
      rmSync(bad, { recursive: true, force: true });
    }
  });
});
