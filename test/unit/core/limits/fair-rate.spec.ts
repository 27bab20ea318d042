import { FairRate } from '../../../../src/core/limits/fair-rate';

/** `A3`: tenant A's call 3 queued; a number: release at that ms. Answers the calls in the order they went. */
function drive(perMinute: number, steps: (string | number)[]): string[] {
  const rate = new FairRate<string>(perMinute);
  const went: string[] = [];
  let now = 0;
  for (const s of steps) {
    if (typeof s === 'number') now = s;
    else rate.push(s[0], s);
    went.push(...rate.release(now).go);
  }
  return went;
}

describe('FairRate: a provider rate shared between tenants', () => {
  // 60 a minute: one a second, one saved up; 120: two saved up, one each 500 ms
  it.each<[string, number, (string | number)[], string[]]>([
    ['alone, a tenant has the whole rate', 60, ['A1', 'A2', 1000, 2000], ['A1', 'A2']],
    [
      'up to the burst at once, then one per token',
      120,
      ['A1', 'A2', 'A3', 500],
      ['A1', 'A2', 'A3'],
    ],
    [
      "A's backlog waits; B's first call takes the next token",
      60,
      ['A1', 'A2', 'A3', 'A4', 'B1', 1000, 2000, 3000, 4000],
      ['A1', 'B1', 'A2', 'A3', 'A4'],
    ],
    [
      'two backlogs take turns, each in its own order',
      60,
      ['A1', 'A2', 'A3', 'B1', 'B2', 'B3', 1000, 2000, 3000, 4000, 5000],
      ['A1', 'B1', 'A2', 'B2', 'A3', 'B3'],
    ],
    [
      "three tenants: C's first call waits for one token per other tenant waiting at most",
      60,
      ['A1', 'A2', 'A3', 'A4', 'B1', 'B2', 1000, 'C1', 2000, 3000, 4000, 5000],
      ['A1', 'B1', 'C1', 'A2', 'B2', 'A3'],
    ],
    [
      'a tenant whose calls come one at a time does not jump the turn',
      60,
      ['A1', 'B1', 'B2', 1000, 'A2', 2000, 'A3', 3000, 4000],
      ['A1', 'B1', 'B2', 'A2', 'A3'],
    ],
    [
      'tokens saved while idle are one second’s worth, not a minute’s',
      60,
      ['A1', 600_000, 'A2', 'A3', 'B1', 601_000],
      ['A1', 'A2', 'B1'],
    ],
  ])('%s', (_case, perMinute, steps, went) => {
    expect(drive(perMinute, steps)).toEqual(went);
  });

  it('answers when the next token is due while calls wait, and null when none does', () => {
    const rate = new FairRate<string>(30); // one each 2 s
    rate.push('A', 'A1');
    expect(rate.release(0)).toEqual({ go: ['A1'], retryAfterMs: null });
    rate.push('A', 'A2');
    expect(rate.release(500)).toEqual({ go: [], retryAfterMs: 1500 });
    expect(rate.waiting()).toEqual(new Map([['A', 1]]));
  });

  it('a call given up leaves the queue and takes no token', () => {
    const rate = new FairRate<string>(60);
    rate.push('A', 'A1');
    rate.release(0);
    rate.push('A', 'A2');
    rate.push('B', 'B1');
    expect(rate.release(0).go).toEqual([]);
    expect(rate.remove('B', 'B1')).toBe(true);
    expect(rate.remove('B', 'B1')).toBe(false);
    expect(rate.release(1000).go).toEqual(['A2']);
    expect(rate.waiting()).toEqual(new Map());
  });
});
