/** Vector search over archival memory: similarity, rank fusion, and the offline hashed embedding. */

/** Cosine similarity in [-1, 1]; 0 when either vector is all zeros or the lengths differ. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) return 0;
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** The `k` of reciprocal rank fusion (Cormack et al.): damps the weight of the very first ranks. */
export const RRF_K = 60;

/**
 * Reciprocal rank fusion: each id scores Σ 1 / (k + rank) over the ranked lists it appears in (rank from
 * 1). Best first; ties keep the order of first appearance (earlier lists, better ranks).
 */
export function reciprocalRankFusion(
  lists: readonly (readonly string[])[],
  k = RRF_K,
): { id: string; score: number }[] {
  const scores = new Map<string, number>();
  for (const list of lists)
    list.forEach((id, i) => scores.set(id, (scores.get(id) ?? 0) + 1 / (k + i + 1)));
  return [...scores].map(([id, score]) => ({ id, score })).sort((x, y) => y.score - x.score);
}

/** The `n` best of `items` by `score`, best first (ties keep input order); O(items) memory. */
export function topByScore<T>(items: Iterable<T>, score: (t: T) => number, n: number): T[] {
  const scored: { t: T; s: number; i: number }[] = [];
  let i = 0;
  for (const t of items) scored.push({ t, s: score(t), i: i++ });
  return scored
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, n)
    .map((x) => x.t);
}

/** 32-bit FNV-1a of a string's UTF-16 units. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * The offline embedding: a hashed bag of words (lower-cased letters and digits), each word adding ±1 at
 * a hashed position, L2-normalised. Deterministic and free, but NOT semantic: two texts are similar only
 * as far as they share words ("cat" and "kitten" are unrelated).
 */
export function hashedEmbedding(text: string, dimensions: number): number[] {
  const v = new Array<number>(dimensions).fill(0);
  for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    const h = fnv1a(word);
    v[h % dimensions] += h & 0x80000000 ? -1 : 1;
  }
  const norm = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return norm === 0 ? v : v.map((x) => x / norm);
}
