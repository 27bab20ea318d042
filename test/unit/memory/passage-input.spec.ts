import {
  parsePassageBatch,
  parsePassageInput,
  parsePassageSearch,
  searchTerms,
} from '../../../src/core/memory/passage-input';

const LIMITS = {
  max_passage_chars: 10,
  max_tags_per_passage: 2,
  max_passages_per_request: 2,
  max_search_results: 5,
};

describe('archival memory input (src/core/memory)', () => {
  it.each([
    ['a passage', { text: 'hello', tags: ['a', 'a', 'b'] }, null],
    ['no text', { tags: [] }, 'text'],
    ['blank text', { text: '  ' }, 'text'],
    ['text past max_passage_chars', { text: 'x'.repeat(11) }, 'text'],
    ['tags past max_tags_per_passage', { text: 'x', tags: ['a', 'b', 'c'] }, 'tags'],
    ['an empty tag', { text: 'x', tags: [''] }, 'tags[0]'],
    ['metadata not an object', { text: 'x', metadata: [1] }, 'metadata'],
    ['created_at not a date', { text: 'x', created_at: 'soon' }, 'created_at'],
    ['a NUL character (PostgreSQL text cannot hold one)', { text: 'a\u0000b' }, 'text'],
  ])('%s', (_what, body, problemAt) => {
    const { input, problems } = parsePassageInput(body, LIMITS);
    if (problemAt === null) {
      expect(problems).toEqual([]);
      expect(input).toEqual({ text: 'hello', tags: ['a', 'b'], metadata: null, createdAt: null });
    } else {
      expect(input).toBeNull();
      expect(problems.map((p) => p.path)).toEqual([problemAt]);
    }
  });

  it("reads the tool's `content` and a batch's paths", () => {
    expect(parsePassageInput({ content: 'c' }, LIMITS, '', 'content').input?.text).toBe('c');
    expect(parsePassageBatch({ passages: [{ text: 'ok' }, {}] }, LIMITS).problems).toEqual([
      expect.objectContaining({ path: 'passages[1].text' }),
    ]);
    expect(parsePassageBatch({ passages: [{}, {}, {}] }, LIMITS).problems).toEqual([
      expect.objectContaining({ path: 'passages', limit: 'limits.max_passages_per_request' }),
    ]);
  });

  it.each([
    ['defaults', { query: 'x' }, { query: 'x', tags: [], tagMatch: 'any', limit: 3 }],
    ['top_k', { query: 'x', top_k: '5' }, { limit: 5 }],
    ['a query-string tag', { query: 'x', tags: 'a' }, { tags: ['a'] }],
    ['no query', {}, { query: null }],
    [
      'dates',
      { start_date: '2026-01-01', end_datetime: '2026-02-01T00:00:00Z' },
      { start: Date.parse('2026-01-01'), end: Date.parse('2026-02-01T00:00:00Z') },
    ],
  ])('search: %s', (_what, q, expected) => {
    const { search, problems } = parsePassageSearch(q, LIMITS, 3);
    expect(problems).toEqual([]);
    expect(search).toMatchObject(expected);
  });

  it.each([
    ['limit past max_search_results', { limit: 6 }, 'limit'],
    ['top_k zero', { top_k: 0 }, 'top_k'],
    ['a bad tag mode', { tag_match_mode: 'most' }, 'tag_match_mode'],
    ['too many tags', { tags: ['a', 'b', 'c'] }, 'tags'],
    ['a query not text', { query: 5 }, 'query'],
  ])('search refuses %s', (_what, q, path) => {
    const { search, problems } = parsePassageSearch(q, LIMITS, 3);
    expect(search).toBeNull();
    expect(problems.map((p) => p.path)).toEqual([path]);
  });

  it('search terms are words only: the index never sees query syntax', () => {
    expect(searchTerms('"cat* OR (mat) NEAR/2 -dog cat')).toEqual([
      'cat',
      'or',
      'mat',
      'near',
      '2',
      'dog',
    ]);
    expect(searchTerms('!!!')).toEqual([]);
    expect(searchTerms(Array.from({ length: 40 }, (_, i) => `w${i}`).join(' '))).toHaveLength(32);
  });
});
