import { readLimit } from '../../../../src/core/limits';
import type { ValidationProblem } from '../../../../src/core/rules/validate-tool-rules';

const limits = { max_page_size: 20, max_search_results: 5 };

describe('readLimit', () => {
  it.each([
    ['absent: the fallback', undefined, 10, 10],
    ['empty text: the fallback', '', 10, 10],
    ['a fallback past the bound is capped', undefined, 50, 20],
    ['query text', '7', 10, 7],
    ['a JSON number', 20, 10, 20],
    ['a repeated query parameter: the last', ['3', '4'], 10, 4],
  ])('%s', (_name, raw, fallback, want) => {
    const problems: ValidationProblem[] = [];
    expect(readLimit(raw, fallback, 'max_page_size', limits, problems)).toBe(want);
    expect(problems).toEqual([]);
  });

  it.each([
    ['past the bound', '21'],
    ['zero', 0],
    ['a fraction', '2.5'],
    ['not a number', 'ten'],
    ['an object', { n: 1 }],
  ])('refuses %s, naming the setting', (_name, raw) => {
    const problems: ValidationProblem[] = [];
    expect(readLimit(raw, 10, 'max_page_size', limits, problems)).toBe(10);
    expect(problems).toEqual([
      { path: 'limit', message: 'must be a whole number from 1 to 20 (limits.max_page_size)' },
    ]);
  });

  it('reads another bound at another path', () => {
    const problems: ValidationProblem[] = [];
    readLimit('6', 5, 'max_search_results', limits, problems, 'top_k');
    expect(problems[0]).toMatchObject({
      path: 'top_k',
      message: expect.stringContaining('1 to 5'),
    });
  });
});
