import { type DueTenant, fairFill } from '../../../../src/core/limits/fair-fill';

/**
 * `A:3@10`: tenant A has 3 due, its oldest due since 10; `open`: attempts each tenant has open here; a
 * tenant's share is 2.
 */
function fill(free: number, due: string[], open: Record<string, number>): Record<string, number> {
  const perTenant = 2;
  const tenants: DueTenant[] = due.map((d) => {
    const [, tenantId, n, oldest] = /^(\w+):(\d+)@(\d+)$/.exec(d)!;
    return { tenantId, due: Number(n), oldest: Number(oldest) };
  });
  return Object.fromEntries(fairFill(free, tenants, (t) => open[t] ?? 0, perTenant));
}

describe('fairFill: free attempt slots shared between tenants with due work', () => {
  it.each<[string, number, string[], Record<string, number>, Record<string, number>]>([
    ['under the bounds, each gets what it has due', 3, ['A:1@1', 'B:1@2'], {}, { A: 1, B: 1 }],
    ['a tenant gets at most its share', 5, ['A:9@1'], {}, { A: 2 }],
    [
      'a tenant holding its share gets no more, however much it has due',
      3,
      ['A:9@1'],
      { A: 2 },
      {},
    ],
    [
      'one slot free: it goes to the tenant with the fewest open, not the backlog it freed from',
      1,
      ['A:9@1', 'C:9@2', 'B:1@3'],
      { A: 1, C: 2 },
      { B: 1 },
    ],
    ['fewest open alike: the one due longest goes first', 1, ['A:1@5', 'B:1@3'], {}, { B: 1 }],
    [
      'slots go round one each, not to one tenant first',
      4,
      ['A:9@1', 'B:9@2', 'C:9@3'],
      {},
      { A: 2, B: 1, C: 1 },
    ],
    ['nothing due, nothing given', 3, [], {}, {}],
  ])('%s', (_name, free, due, open, want) => {
    expect(fill(free, due, open)).toEqual(want);
  });
});
