/* eslint-disable @typescript-eslint/no-explicit-any -- response bodies are free-form JSON that tests inspect */
import { startApp, TestApp } from '../../support/app-harness';
import { TENANT_A, TWO_TENANTS } from '../../support/processing-fixtures';

/**
 * Keys JavaScript objects already have. A JSON body's `"__proto__"` is an own key once parsed, but the
 * save that stores an agent copies its JSON fields key by key and leaves `__proto__` out (so as not to set a
 * prototype), and a key named as a member of Object.prototype (`toString`, `valueOf`…) holding an object
 * too: `metadata: {"__proto__": {...}}` was stored as `{}`, answered 200. A tool's header named
 * `__proto__` was accepted likewise, a header map looked up by name. Both are refused, naming the path.
 */
describe('security: keys every object has', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startApp({ overrides: TWO_TENANTS });
  });
  afterAll(() => t.close());

  /** The body as written: a JS object literal's `__proto__` would set its prototype, not a key. */
  const raw = async (method: string, path: string, body: string) => {
    const res = await fetch(`${t.baseUrl}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...TENANT_A },
      body,
    });
    return { status: res.status, body: (await res.json()) as any };
  };
  const paths = (res: { body: any }) =>
    (res.body.details?.problems ?? []).map((p: any) => p.path as string);

  it('an agent whose metadata has a __proto__ key, at the top or inside: 400 naming the path, no agent made', async () => {
    const top = await raw('POST', '/v1/agents/', '{"name":"p1","metadata":{"__proto__":{"x":1}}}');
    expect([top.status, top.body.code, paths(top)]).toEqual([
      400,
      'VALIDATION_FAILED',
      ['metadata.__proto__'],
    ]);
    const inner = await raw(
      'POST',
      '/v1/agents/',
      '{"name":"p2","metadata":{"a":{"toString":{"x":1}},"b":[{"__proto__":1}]}}',
    );
    expect([inner.status, paths(inner).sort()]).toEqual([
      400,
      ['metadata.a.toString', 'metadata.b[0].__proto__'],
    ]);
    const listed = await fetch(`${t.baseUrl}/v1/agents/?name=p1`, { headers: TENANT_A });
    expect(await listed.json()).toEqual([]);
  });

  it('the same names as plain values are kept as sent; an update with __proto__ is refused and changes nothing', async () => {
    const metadata = '{"prototype":{"x":1},"toString":"s","constructor":"c","note":"kept"}';
    const made = await raw('POST', '/v1/agents/', `{"name":"p3","metadata":${metadata}}`);
    expect(made.status).toBe(200);
    const read = await fetch(`${t.baseUrl}/v1/agents/${made.body.id}`, { headers: TENANT_A });
    expect(JSON.stringify(((await read.json()) as any).metadata)).toBe(metadata);
    const update = await raw(
      'PATCH',
      `/v1/agents/${made.body.id}`,
      '{"metadata":{"__proto__":{"admin":true}}}',
    );
    expect([update.status, paths(update)]).toEqual([400, ['metadata.__proto__']]);
    const after = await fetch(`${t.baseUrl}/v1/agents/${made.body.id}`, { headers: TENANT_A });
    expect(JSON.stringify(((await after.json()) as any).metadata)).toBe(metadata);
  });

  it.each(['__proto__', 'constructor', 'prototype'])(
    'a tool header named %s: 400 naming it',
    async (name) => {
      const tool = `{"name":"hdr_${name.replace(/_/g, '')}","description":"d","safety":"read_only","kind":"http","http":{"url":"http://127.0.0.1:9/x","method":"POST","headers":{"${name}":"v"}}}`;
      const res = await raw('POST', '/v1/tools/', tool);
      expect([res.status, res.body.code, paths(res)]).toEqual([
        400,
        'VALIDATION_FAILED',
        [`http.headers.${name}`],
      ]);
    },
  );
});
