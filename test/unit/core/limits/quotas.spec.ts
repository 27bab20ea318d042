import {
  QUOTA_NAMES,
  quotaFor,
  quotaRefusal,
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
});
