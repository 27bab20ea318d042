import { quotaFor } from '../../../../src/core/limits/quotas';

const settings = { defaults: { running_runs: 10 }, tenants: { big: { running_runs: 100 } } };

describe('quotas', () => {
  it.each<[string, string, number]>([
    ['a tenant named nowhere: the default', 'small', 10],
    ['a tenant with its own number', 'big', 100],
  ])('quotaFor: %s', (_case, tenant, limit) => {
    expect(quotaFor(settings, tenant, 'running_runs')).toBe(limit);
  });
});
