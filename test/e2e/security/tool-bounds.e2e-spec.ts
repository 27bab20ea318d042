/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startApp, TestApp } from '../../support/app-harness';
import { api } from '../consent-helpers';

/**
 * QA: a tenant created 600 tools with ~1 MB descriptions; `GET /v1/tools?limit=1000` then failed with a
 * 500 (`RangeError: Invalid string length`) and memory grew to 2 GB. Tools one tenant declares are counted
 * (`quotas.tools`, 409 QUOTA_EXCEEDED), and each description and parameters schema is bounded
 * (`limits.max_tool_description_chars`, `limits.max_tool_parameters_bytes`, 400 at the field).
 */
describe('security: bounded tools', () => {
  const MAX_TOOLS = 5;
  const MAX_DESCRIPTION = 100;
  const MAX_PARAMETERS = 1024;
  const KEYS = [
    { key: 'sk-a', tenant: 'a' },
    { key: 'sk-b', tenant: 'b' },
  ];
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({
      overrides: {
        auth: { api_keys: KEYS },
        quotas: { tools: MAX_TOOLS },
        limits: {
          max_tool_description_chars: MAX_DESCRIPTION,
          max_tool_parameters_bytes: MAX_PARAMETERS,
        },
      },
    });
  });
  afterAll(() => t.close());

  const httpTool = (name: string, over: Record<string, unknown> = {}) => ({
    name,
    safety: 'read_only',
    kind: 'http',
    parameters: { type: 'object', properties: { q: { type: 'string' } } },
    http: { url: 'http://127.0.0.1:9/x', method: 'POST' },
    ...over,
  });
  const expectInvalidAt = (res: { status: number; body: any }, field: string, setting: string) => {
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('VALIDATION_FAILED');
    expect(res.body.details.problems).toEqual([
      expect.objectContaining({ path: field, message: expect.stringContaining(setting) }),
    ]);
  };
  const hugeSchema = {
    type: 'object',
    properties: { q: { type: 'string', description: 'x'.repeat(MAX_PARAMETERS) } },
  };

  it('a description one character past the bound → 400 at description, nothing stored', async () => {
    const long = httpTool('long_desc', { description: 'x'.repeat(MAX_DESCRIPTION + 1) });
    expectInvalidAt(
      await api(t, 'POST', '/v1/tools/', long, 'sk-a'),
      'description',
      'limits.max_tool_description_chars',
    );
    expectInvalidAt(
      await api(t, 'PUT', '/v1/tools/', long, 'sk-a'),
      'description',
      'limits.max_tool_description_chars',
    );
    const fits = httpTool('fits', { description: 'x'.repeat(MAX_DESCRIPTION) });
    const made = await api(t, 'POST', '/v1/tools/', fits, 'sk-a');
    expect(made.status).toBe(200);
    // a PATCH cannot grow it past the bound either (nor through Letta's json_schema)
    for (const patch of [
      { description: 'y'.repeat(MAX_DESCRIPTION + 1) },
      { json_schema: { description: 'y'.repeat(MAX_DESCRIPTION + 1) } },
    ])
      expectInvalidAt(
        await api(t, 'PATCH', `/v1/tools/${made.body.id}`, patch, 'sk-a'),
        'description',
        'limits.max_tool_description_chars',
      );
    await api(t, 'DELETE', `/v1/tools/${made.body.id}`, undefined, 'sk-a');
    const names = (await api(t, 'GET', '/v1/tools/?limit=100', undefined, 'sk-a')).body.map(
      (x: any) => x.name,
    );
    expect(names).not.toContain('long_desc');
  });

  it('a parameters schema past the bound → 400 at parameters (POST, PUT, PATCH args_json_schema)', async () => {
    const setting = 'limits.max_tool_parameters_bytes';
    const big = httpTool('big_schema', { parameters: hugeSchema });
    expectInvalidAt(await api(t, 'POST', '/v1/tools/', big, 'sk-a'), 'parameters', setting);
    expectInvalidAt(await api(t, 'PUT', '/v1/tools/', big, 'sk-a'), 'parameters', setting);
    const made = await api(t, 'POST', '/v1/tools/', httpTool('small_schema'), 'sk-a');
    expectInvalidAt(
      await api(t, 'PATCH', `/v1/tools/${made.body.id}`, { args_json_schema: hugeSchema }, 'sk-a'),
      'parameters',
      setting,
    );
    await api(t, 'DELETE', `/v1/tools/${made.body.id}`, undefined, 'sk-a');
  });

  it('a tool of 33 headers (limits.max_tool_headers: 32) → 400 LIMIT_EXCEEDED at http.headers, nothing stored', async () => {
    const headers = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`X-H${i}`, 'v']));
    const res = await api(
      t,
      'POST',
      '/v1/tools/',
      httpTool('many_headers', { http: { url: 'http://127.0.0.1:9/x', headers } }),
      'sk-a',
    );
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('LIMIT_EXCEEDED');
    expect(res.body.details).toMatchObject({
      limits: ['limits.max_tool_headers'],
      problems: [expect.objectContaining({ path: 'http.headers' })],
    });
    const names = (await api(t, 'GET', '/v1/tools/?name=many_headers', undefined, 'sk-a')).body;
    expect(names).toEqual([]);
  });

  it('a header value of 700 KB (stored, listed and sent with every call before) → 400 at http.headers.X-Key naming limits.max_tool_header_value_chars (POST, PUT, PATCH)', async () => {
    const setting = 'limits.max_tool_header_value_chars';
    const withHeader = (name: string, value: string) =>
      httpTool(name, { http: { url: 'http://127.0.0.1:9/x', headers: { 'X-Key': value } } });
    const long = withHeader('long_header', 'x'.repeat(700_000));
    expectInvalidAt(
      await api(t, 'POST', '/v1/tools/', long, 'sk-a'),
      'http.headers.X-Key',
      setting,
    );
    expectInvalidAt(await api(t, 'PUT', '/v1/tools/', long, 'sk-a'), 'http.headers.X-Key', setting);
    // the bound itself is accepted; a PATCH cannot grow it past the bound
    const made = await api(
      t,
      'POST',
      '/v1/tools/',
      withHeader('fits_header', 'x'.repeat(8192)),
      'sk-a',
    );
    expect(made.status).toBe(200);
    expectInvalidAt(
      await api(
        t,
        'PATCH',
        `/v1/tools/${made.body.id}`,
        { http: { url: 'http://127.0.0.1:9/x', headers: { 'X-Key': 'y'.repeat(8193) } } },
        'sk-a',
      ),
      'http.headers.X-Key',
      setting,
    );
    await api(t, 'DELETE', `/v1/tools/${made.body.id}`, undefined, 'sk-a');
    expect((await api(t, 'GET', '/v1/tools/?name=long_header', undefined, 'sk-a')).body).toEqual(
      [],
    );
  });

  it('32 headers naming 28,800 secrets (80,000 in one header were 80,000 queries and 6.6 s): checked in one read: 400', async () => {
    // each value within limits.max_tool_header_value_chars (8192): 900 references of 9 characters
    const headers = Object.fromEntries(
      Array.from({ length: 32 }, (_, h) => [
        `X-Key${h}`,
        Array.from({ length: 900 }, (_, i) => `\${S${10_000 + h * 900 + i}}`).join(''),
      ]),
    );
    const res = await api(
      t,
      'POST',
      '/v1/tools/',
      httpTool('many_refs', { http: { url: 'http://127.0.0.1:9/x', headers } }),
      'sk-a',
    );
    expect(res.status).toBe(400);
    expect(res.body.details.problems[0].message).toContain('${S10000}');
  });

  it('tenant A declares one tool past quotas.tools → 409 QUOTA_EXCEEDED; B is not affected', async () => {
    const ids: string[] = [];
    for (let i = 0; i < MAX_TOOLS; i++) {
      const res = await api(t, 'POST', '/v1/tools/', httpTool(`mine_${i}`), 'sk-a');
      expect(res.status).toBe(200);
      ids.push(res.body.id);
    }
    for (const method of ['POST', 'PUT']) {
      const res = await api(t, method, '/v1/tools/', httpTool('one_more'), 'sk-a');
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({
        code: 'QUOTA_EXCEEDED',
        message: expect.stringContaining('quotas.tools'),
        details: { quota: 'tools', limit: MAX_TOOLS },
      });
    }
    // replacing a tool the tenant has adds none: still allowed at the bound
    const replaced = await api(
      t,
      'PUT',
      '/v1/tools/',
      httpTool('mine_0', { description: 'v2' }),
      'sk-a',
    );
    expect(replaced.status).toBe(200);
    expect(replaced.body.id).toBe(ids[0]);
    expect((await api(t, 'POST', '/v1/tools/', httpTool('theirs'), 'sk-b')).status).toBe(200);
    // deleting one frees its place
    await api(t, 'DELETE', `/v1/tools/${ids[1]}`, undefined, 'sk-a');
    expect((await api(t, 'POST', '/v1/tools/', httpTool('one_more'), 'sk-a')).status).toBe(200);
  });

  it("an operator's tool file is held to the same bound: the boot stops naming the setting", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-server-test-'));
    try {
      mkdirSync(path.join(dir, 'tools'));
      writeFileSync(
        path.join(dir, 'tools', 'long.yaml'),
        JSON.stringify(
          httpTool('long_file_tool', { description: 'x'.repeat(MAX_DESCRIPTION + 1) }),
        ),
      );
      await expect(
        startApp({
          dir,
          overrides: { limits: { max_tool_description_chars: MAX_DESCRIPTION } },
        }),
      ).rejects.toThrow(/long\.yaml: description: must be at most 100 characters/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
