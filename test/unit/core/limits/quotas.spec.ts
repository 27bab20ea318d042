import {
  QUOTA_NAMES,
  quotaFor,
  quotaRefusal,
  quotaUsage,
  type Quotas,
} from '../../../../src/core/limits/quotas';

const defaults = Object.fromEntries(QUOTA_NAMES.map((n) => [n, 10])) as Quotas;
const settings = { defaults, tenants: { big: { agents: 100 } } };

describe('quotas', () => {
  it.each<[string, string, 'agents' | 'blocks', number]>([
    ['a tenant named nowhere: the default', 'small', 'agents', 10],
    ['a tenant with its own number', 'big', 'agents', 100],
    ['a tenant with its own numbers, another quota: the default', 'big', 'blocks', 10],
  ])('quotaFor: %s', (_case, tenant, quota, limit) => {
    expect(quotaFor(settings, tenant, quota)).toBe(limit);
  });

  it.each<[string, number, number, number, boolean]>([
    ['within the limit', 10, 10, 1, false],
    ['one past it', 10, 11, 1, true],
    ['a batch past it', 10, 13, 3, true],
    ['adding nothing over a lowered limit', 10, 15, 0, false],
    ['taking away over a lowered limit', 10, 14, -1, false],
  ])('quotaRefusal: %s', (_case, limit, used, added, refused) => {
    const r = quotaRefusal('passages', limit, used, added);
    expect(r).toEqual(refused ? { quota: 'passages', limit, used } : null);
  });

  it('quotaUsage: every quota with its count (none stored: 0), bound and setting; stored bytes; running runs per instance', () => {
    const big = quotaUsage(settings, 'big', { agents: 7, passages: 3 }, 4096, 2);
    expect(big.map((q) => q.quota)).toEqual(QUOTA_NAMES);
    const by = Object.fromEntries(big.map((q) => [q.quota, q]));
    expect(by.agents).toEqual({
      quota: 'agents',
      used: 7,
      limit: 100,
      setting: 'quotas.tenants.big.agents',
      scope: 'tenant',
    });
    expect(by.passages).toMatchObject({ used: 3, limit: 10, setting: 'quotas.passages' });
    expect(by.blocks).toMatchObject({ used: 0, limit: 10 });
    expect(by.stored_bytes).toEqual({
      quota: 'stored_bytes',
      used: 4096,
      limit: 10,
      setting: 'quotas.stored_bytes',
      scope: 'tenant',
    });
    expect(by.running_runs).toEqual({
      quota: 'running_runs',
      used: 2,
      limit: 10,
      setting: 'quotas.running_runs',
      scope: 'instance',
    });
  });
});
