import {
  cosine,
  hashedEmbedding,
  reciprocalRankFusion,
  topByScore,
} from '../../../src/core/memory/vectors';

describe('cosine', () => {
  it.each([
    ['the same direction', [1, 2, 3], [2, 4, 6], 1],
    ['opposite directions', [1, 0], [-1, 0], -1],
    ['orthogonal vectors', [1, 0], [0, 5], 0],
    ['a zero vector', [0, 0], [1, 1], 0],
    ['vectors of different lengths', [1, 2], [1, 2, 3], 0],
  ])('%s', (_what, a, b, expected) => {
    expect(cosine(a, b)).toBeCloseTo(expected, 10);
  });

  it('reads Float32Arrays as stored', () => {
    expect(cosine(Float32Array.from([3, 4]), [3, 4])).toBeCloseTo(1, 6);
  });
});

describe('reciprocalRankFusion', () => {
  it('scores Σ 1/(k + rank) and puts an id found by both lists first', () => {
    const fused = reciprocalRankFusion([
      ['a', 'b', 'c'],
      ['c', 'd'],
    ]);
    expect(fused.map((f) => f.id)).toEqual(['c', 'a', 'b', 'd']);
    expect(fused[0].score).toBeCloseTo(1 / 63 + 1 / 61, 12);
    expect(fused[1].score).toBeCloseTo(1 / 61, 12);
  });

  it('keeps first appearance on ties, and nothing in gives nothing out', () => {
    expect(reciprocalRankFusion([['x'], ['y']]).map((f) => f.id)).toEqual(['x', 'y']);
    expect(reciprocalRankFusion([[], []])).toEqual([]);
  });
});

describe('topByScore', () => {
  it('keeps the n best, best first, ties in input order', () => {
    expect(topByScore(['a', 'bb', 'cc', 'ddd'], (s) => s.length, 3)).toEqual(['ddd', 'bb', 'cc']);
  });
});

describe('hashedEmbedding (the offline provider)', () => {
  it('is deterministic, of the asked dimensions and unit length', () => {
    const v = hashedEmbedding('The cat sat on the mat', 64);
    expect(v).toHaveLength(64);
    expect(hashedEmbedding('The cat sat on the mat', 64)).toEqual(v);
    expect(Math.hypot(...v)).toBeCloseTo(1, 10);
  });

  it('ignores case and punctuation', () => {
    expect(hashedEmbedding('CAT, mat!', 32)).toEqual(hashedEmbedding('cat mat', 32));
  });

  it('ranks by shared words only: not semantic', () => {
    const q = hashedEmbedding('cat food', 256);
    const shared = cosine(q, hashedEmbedding('food for the cat', 256));
    const synonym = cosine(q, hashedEmbedding('kitten meal', 256));
    expect(shared).toBeGreaterThan(0.5);
    expect(shared).toBeGreaterThan(synonym);
  });

  it('gives a zero vector for a text without words', () => {
    expect(hashedEmbedding('?!', 8)).toEqual(new Array(8).fill(0));
  });
});
