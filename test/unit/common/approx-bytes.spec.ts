import { approxBytes } from '../../../src/common/approx-bytes';

describe('approxBytes', () => {
  it.each([
    ['a string: its characters and a header', 'x'.repeat(1000), 1016],
    ['a number', 42, 8],
    ['null', null, 8],
    ['an empty object', {}, 32],
    ['an array of two numbers', [1, 2], 32 + 2 * 16],
    ['an object: keys, values and entries', { ab: 'xyz' }, 32 + 8 + 16 + 2 + 16 + 3],
    ['bytes', new Uint8Array(100), 164],
  ])('%s', (_name, value, bytes) => expect(approxBytes(value)).toBe(bytes));

  it('grows with what a record holds, nested', () => {
    const record = (prompt: number) => ({
      system: 'p'.repeat(prompt),
      tools: [{ name: 't', json_schema: { properties: { q: { type: 'string' } } } }],
    });
    expect(approxBytes(record(100_000)) - approxBytes(record(0))).toBe(100_000);
  });

  it('stops at a cycle', () => {
    const a: Record<string, unknown> = {};
    a.self = a;
    expect(approxBytes(a)).toBeGreaterThan(0);
  });
});
