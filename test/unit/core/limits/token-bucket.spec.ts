import { Bucket, takeToken } from '../../../../src/core/limits/token-bucket';

/** Takes `n` tokens at the times given (ms), answering which were allowed. */
function drive(
  rate: number,
  burst: number,
  times: number[],
): { allowed: boolean[]; retry: number[] } {
  let b: Bucket | undefined;
  const allowed: boolean[] = [];
  const retry: number[] = [];
  for (const at of times) {
    const r = takeToken(b, rate, burst, at);
    b = r.bucket;
    allowed.push(r.allowed);
    retry.push(r.retryAfterMs);
  }
  return { allowed, retry };
}

describe('takeToken', () => {
  const rows: [string, number, number, number[], boolean[]][] = [
    ['a full bucket allows a burst', 10, 3, [0, 0, 0], [true, true, true]],
    ['past the burst at one instant: refused', 10, 3, [0, 0, 0, 0], [true, true, true, false]],
    ['refills at the rate (10/s = one per 100 ms)', 10, 1, [0, 50, 100], [true, false, true]],
    [
      'never saves more than the burst',
      10,
      2,
      [0, 10_000, 10_000, 10_000],
      [true, true, true, false],
    ],
    ['rate 0 = no limit', 0, 1, [0, 0, 0, 0], [true, true, true, true]],
    ['a clock going back refills nothing', 10, 1, [1000, 0, 500], [true, false, false]],
  ];
  it.each(rows)('%s', (_name, rate, burst, times, expected) => {
    expect(drive(rate, burst, times).allowed).toEqual(expected);
  });

  it('a refusal says how long until the next token', () => {
    expect(drive(4, 1, [0, 0]).retry).toEqual([0, 250]);
    expect(drive(4, 1, [0, 100]).retry).toEqual([0, 150]);
  });
});
