import { countProblem, readLimit, type InputLimits } from '../limits';
import type { ValidationProblem } from '../rules/validate-tool-rules';

export interface ListAgentsQuery {
  limit: number;
  /** `limits.max_page_bytes`: the page's agents, with their blocks, together. */
  maxBytes: number;
  after: string | null;
  before: string | null;
  name: string | null;
  /** Letta's `query_text`: a case-insensitive part of the name. */
  queryText: string | null;
  tags: string[];
  matchAllTags: boolean;
  order: 'asc' | 'desc';
  /** Letta's `identity_id`: agents attached to this identity. */
  identityId: string | null;
  /** Letta's `identifier_keys`: agents attached to an identity with one of these keys. */
  identifierKeys: string[];
  /** Letta's `last_stop_reason`: agents whose last batch stopped so. */
  lastStopReason: string | null;
  /** Letta's `project_id` / `template_id` / `base_template_id`: no agent here has one, so none matches. */
  matchesNone: boolean;
  /** Letta's `show_hidden_agents`: hidden agents are left out unless it is true. */
  showHidden: boolean;
}

export const DEFAULT_LIST_LIMIT = 50;
const QUERY_TEXT_MAX = 200;

type Query = Record<string, unknown>;

const one = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);

/** Parses `GET /v1/agents/` query parameters (Letta's names). Tags come as `tags=a&tags=b` or `tags[]=a`. */
export function parseListAgentsQuery(
  q: Query,
  limits: Pick<InputLimits, 'max_filter_values' | 'max_page_size' | 'max_page_bytes'>,
): {
  query: ListAgentsQuery;
  problems: ValidationProblem[];
} {
  const problems: ValidationProblem[] = [];
  const query: ListAgentsQuery = {
    limit: DEFAULT_LIST_LIMIT,
    maxBytes: limits.max_page_bytes,
    after: null,
    before: null,
    name: null,
    queryText: null,
    tags: [],
    matchAllTags: false,
    order: 'desc',
    identityId: null,
    identifierKeys: [],
    lastStopReason: null,
    matchesNone: false,
    showHidden: false,
  };
  query.limit = readLimit(q.limit, DEFAULT_LIST_LIMIT, 'max_page_size', limits, problems);
  for (const k of ['after', 'before', 'name'] as const) {
    const v = one(q[k]);
    if (v === undefined || v === '') continue;
    if (typeof v !== 'string') problems.push({ path: k, message: 'must be a string' });
    else query[k] = v;
  }
  const text = one(q.query_text);
  if (text !== undefined && text !== '') {
    if (typeof text !== 'string' || text.length > QUERY_TEXT_MAX)
      problems.push({
        path: 'query_text',
        message: `must be a text of at most ${QUERY_TEXT_MAX} characters`,
      });
    else query.queryText = text;
  }
  const rawTags = [q.tags, q['tags[]']].flatMap((v): unknown[] =>
    v === undefined ? [] : Array.isArray(v) ? (v as unknown[]) : [v],
  );
  // each tag is an SQL variable: a bounded list, never a query SQLite refuses (a 500)
  const tooMany = countProblem('tags', new Set(rawTags).size, 'max_filter_values', limits);
  if (tooMany) problems.push(tooMany);
  else
    for (const t of rawTags) {
      if (typeof t !== 'string') problems.push({ path: 'tags', message: 'must be strings' });
      else if (t !== '') query.tags.push(t);
    }
  for (const [key, field] of [
    ['match_all_tags', 'matchAllTags'],
    ['show_hidden_agents', 'showHidden'],
  ] as const) {
    const v = one(q[key]);
    if (v === undefined) continue;
    if (v === 'true' || v === '1') query[field] = true;
    else if (v !== 'false' && v !== '0' && v !== '')
      problems.push({ path: key, message: 'must be true or false' });
  }
  const identityId = one(q.identity_id);
  if (identityId !== undefined && identityId !== '') {
    if (typeof identityId !== 'string' || identityId.length > 200)
      problems.push({ path: 'identity_id', message: 'must be an identity id' });
    else query.identityId = identityId;
  }
  const rawKeys = [q.identifier_keys, q['identifier_keys[]']].flatMap((v): unknown[] =>
    v === undefined ? [] : Array.isArray(v) ? (v as unknown[]) : [v],
  );
  const tooManyKeys = countProblem(
    'identifier_keys',
    new Set(rawKeys).size,
    'max_filter_values',
    limits,
  );
  if (tooManyKeys) problems.push(tooManyKeys);
  else
    for (const k of rawKeys) {
      if (typeof k !== 'string' || k.length > 200)
        problems.push({
          path: 'identifier_keys',
          message: 'must be texts of at most 200 characters',
        });
      else if (k !== '') query.identifierKeys.push(k);
    }
  const order = one(q.order);
  if (order !== undefined && order !== '') {
    if (order === 'asc' || order === 'desc') query.order = order;
    else problems.push({ path: 'order', message: 'must be asc or desc' });
  }
  const stop = one(q.last_stop_reason);
  if (stop !== undefined && stop !== '') {
    if (typeof stop !== 'string' || stop.length > 64)
      problems.push({ path: 'last_stop_reason', message: 'must be a stop reason' });
    else query.lastStopReason = stop;
  }
  for (const k of ['project_id', 'template_id', 'base_template_id'])
    if (one(q[k]) !== undefined && one(q[k]) !== '') query.matchesNone = true;
  const ascending = one(q.ascending);
  if (ascending === 'true') query.order = 'asc';
  return { query, problems };
}
