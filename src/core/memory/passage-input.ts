import { nulBytePaths } from '../agents/nul-bytes';
import { countProblem, readInstant, readLimit, type InputLimits } from '../limits';
import type { ValidationProblem } from '../rules/validate-tool-rules';

/** A tag's length bound (the column's size). */
export const PASSAGE_TAG_MAX = 200;
/** Words of a search query that reach the full-text index (the rest are ignored). */
export const MAX_QUERY_TERMS = 32;
const QUERY_MAX_CHARS = 10_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export type PassageLimits = Pick<
  InputLimits,
  'max_passage_chars' | 'max_tags_per_passage' | 'max_passages_per_request' | 'max_search_results'
>;

/** A passage to store (Letta's CreateArchivalMemory / PassageCreateRequest). */
export interface PassageInput {
  text: string;
  tags: string[];
  metadata: Obj | null;
  /** Epoch ms; null = now. */
  createdAt: number | null;
}

/** What to look for in archival memory (the agent route, `passages.search` and the tool alike). */
export interface PassageSearch {
  /** Null or no words: no full-text condition (newest first). */
  query: string | null;
  tags: string[];
  tagMatch: 'any' | 'all';
  limit: number;
  /** Epoch ms bounds on created_at (inclusive). */
  start: number | null;
  end: number | null;
  /**
   * `search_mode` (ours on passages; Letta's messages search has it): null picks vector when the searched
   * archives have an embedding model, else full text.
   */
  mode: SearchMode | null;
}

export const SEARCH_MODES = ['fts', 'vector', 'hybrid'] as const;
export type SearchMode = (typeof SEARCH_MODES)[number];

function tagList(
  v: unknown,
  path: string,
  limits: PassageLimits,
  problems: ValidationProblem[],
): string[] {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list)) {
    problems.push({ path, message: 'must be a list of strings' });
    return [];
  }
  const tooMany = countProblem(path, new Set(list).size, 'max_tags_per_passage', limits);
  if (tooMany) {
    problems.push(tooMany);
    return [];
  }
  const out: string[] = [];
  list.forEach((t, i) => {
    if (typeof t !== 'string' || t === '' || t.length > PASSAGE_TAG_MAX)
      problems.push({
        path: `${path}[${i}]`,
        message: `must be a non-empty string of at most ${PASSAGE_TAG_MAX} characters`,
      });
    else if (!out.includes(t)) out.push(t);
  });
  return out;
}

/** One passage to store, read from `key` (`text`, or the tool's `content`) at `at` ('' or `passages[0]`). */
export function parsePassageInput(
  body: unknown,
  limits: PassageLimits,
  at = '',
  key = 'text',
): { input: PassageInput | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const path = (f: string) => (at ? `${at}.${f}` : f);
  if (!isObj(body))
    return { input: null, problems: [{ path: at || '$', message: 'must be an object' }] };
  // PostgreSQL text cannot hold NUL: a 400, never a failed insert
  const nul = nulBytePaths(body, at);
  if (nul.length) return { input: null, problems: nul };
  const text = body[key];
  if (typeof text !== 'string' || text.trim() === '')
    problems.push({ path: path(key), message: 'is required (a non-empty string)' });
  else if (text.length > limits.max_passage_chars)
    problems.push({
      path: path(key),
      message: `is ${text.length} characters; at most ${limits.max_passage_chars} (limits.max_passage_chars)`,
    });
  const tags = tagList(body.tags, path('tags'), limits, problems);
  const metadata = body.metadata ?? null;
  if (metadata !== null && !isObj(metadata))
    problems.push({ path: path('metadata'), message: 'must be an object or null' });
  const createdAt = readInstant(body.created_at, path('created_at'), problems);
  if (problems.length) return { input: null, problems };
  return {
    input: { text: text as string, tags, metadata: metadata as Obj | null, createdAt },
    problems,
  };
}

/** `{passages: [...]}` of a batch create. */
export function parsePassageBatch(
  body: unknown,
  limits: PassageLimits,
): { inputs: PassageInput[]; problems: ValidationProblem[] } {
  const list = isObj(body) ? body.passages : undefined;
  if (!Array.isArray(list))
    return { inputs: [], problems: [{ path: 'passages', message: 'must be a list of passages' }] };
  const tooMany = countProblem('passages', list.length, 'max_passages_per_request', limits);
  if (tooMany) return { inputs: [], problems: [tooMany] };
  const inputs: PassageInput[] = [];
  const problems: ValidationProblem[] = [];
  list.forEach((p, i) => {
    const r = parsePassageInput(p, limits, `passages[${i}]`);
    if (r.input) inputs.push(r.input);
    problems.push(...r.problems);
  });
  return { inputs, problems };
}

/**
 * A search, from the agent route's query (`query`, `tags`, `tag_match_mode`, `top_k`, `start_datetime`,
 * `end_datetime`; also the tool's arguments) or `passages.search`'s body (`limit`, `start_date`, `end_date`).
 */
export function parsePassageSearch(
  q: Obj,
  limits: PassageLimits,
  defaultLimit: number,
): { search: PassageSearch | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const one = (v: unknown) => (Array.isArray(v) && v.length === 1 ? (v[0] as unknown) : v);
  const query = one(q.query);
  if (
    query !== undefined &&
    query !== null &&
    (typeof query !== 'string' || query.length > QUERY_MAX_CHARS)
  )
    problems.push({
      path: 'query',
      message: `must be a text of at most ${QUERY_MAX_CHARS} characters`,
    });
  const tags = tagList(q.tags ?? q['tags[]'], 'tags', limits, problems);
  const mode = one(q.tag_match_mode) ?? 'any';
  if (mode !== 'any' && mode !== 'all')
    problems.push({ path: 'tag_match_mode', message: 'must be "any" or "all"' });
  const limitKey = q.top_k !== undefined && q.top_k !== null ? 'top_k' : 'limit';
  const limit = readLimit(
    q[limitKey],
    defaultLimit,
    'max_search_results',
    limits,
    problems,
    limitKey,
  );
  const startKey = q.start_datetime !== undefined ? 'start_datetime' : 'start_date';
  const endKey = q.end_datetime !== undefined ? 'end_datetime' : 'end_date';
  const start = readInstant(one(q[startKey]), startKey, problems);
  const end = readInstant(one(q[endKey]), endKey, problems);
  const searchMode = one(q.search_mode) ?? null;
  if (searchMode !== null && !SEARCH_MODES.includes(searchMode as SearchMode))
    problems.push({ path: 'search_mode', message: `must be one of ${SEARCH_MODES.join(', ')}` });
  if (problems.length) return { search: null, problems };
  return {
    search: {
      query: typeof query === 'string' && query.trim() !== '' ? query : null,
      tags,
      tagMatch: mode as 'any' | 'all',
      limit,
      start,
      end,
      mode: searchMode as SearchMode | null,
    },
    problems,
  };
}

/** The words of a query that the full-text index sees: letters and digits only, so never its syntax. */
export function searchTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return [...new Set(words)].slice(0, MAX_QUERY_TERMS);
}
