import { startApp } from '../../support/app-harness';

/**
 * Tenant ids are the operator's to choose, and one of them is taken: `*` holds what the operator's files
 * declare for every tenant (tools, MCP servers).
 */
describe('security: tenant names', () => {
  // QA: with API_KEYS=ka:*,kb:b, the key of tenant "*" declared a tool every tenant listed (and its agents
  // resolved before their own of that name) and an MCP server every tenant saw and could delete
  it.each([
    ['API_KEYS', { env: { API_KEYS: 'ka:*,kb:tenant-b' } }, /API_KEYS|auth\.api_keys\[0\]\.tenant/],
    [
      'auth.api_keys',
      { overrides: { auth: { api_keys: [{ key: 'ka', tenant: '*' }] } } },
      /auth\.api_keys\[0\]\.tenant/,
    ],
  ])(
    'a key for tenant "*" (%s), whose tools and MCP servers every tenant would get, stops the boot',
    async (_where, opts, named) => {
      await expect(startApp(opts)).rejects.toThrow(named);
    },
  );
});
