import { readLimit, type InputLimits } from '../core/limits';
import { badRequest, validationFailed, type ValidationProblem } from './domain-error';

/** Letta's page parameters of a list: `limit`, `order`, and the `before` / `after` cursors (ids). */
export interface PageQuery {
  limit: number;
  order: 'asc' | 'desc';
  before?: string;
  after?: string;
}

type PageLimits = Pick<InputLimits, 'max_page_size'>;

/** Reads the page parameters of a query; problems are pushed, the caller throws them with its own. */
export function readPageQuery(
  q: Record<string, unknown>,
  problems: ValidationProblem[],
  defaultLimit: number,
  limits: PageLimits,
  defaultOrder: 'asc' | 'desc' = 'desc',
): PageQuery {
  const out: PageQuery = {
    limit: readLimit(q.limit, defaultLimit, 'max_page_size', limits, problems),
    order: defaultOrder,
  };
  if (q.order !== undefined) {
    if (q.order !== 'asc' && q.order !== 'desc') {
      problems.push({ path: 'order', message: 'must be "asc" or "desc"' });
    } else out.order = q.order;
  }
  for (const key of ['before', 'after'] as const) {
    const v = q[key];
    if (v === undefined || v === '') continue;
    if (typeof v !== 'string' || v.length > 200) {
      problems.push({ path: key, message: 'must be an id' });
    } else out[key] = v;
  }
  return out;
}

/**
 * One page of a list the server holds whole (an agent's tools or blocks, a run's messages or steps):
 * `order=asc` is the list's own order, `desc` the reverse; `after` / `before` are ids of the list, relative
 * to that order, as the stored lists' cursors are (the SDK's auto-pagination sends `after=<last id>` until
 * a page is empty); `limit` defaults to the whole list up to `limits.max_page_size`. A cursor that is not
 * in the list is 400 `UNKNOWN_CURSOR`. Query problems are 400 `VALIDATION_FAILED`.
 */
export function pageOfList<T extends { id: string }>(
  items: readonly T[],
  query: Record<string, unknown>,
  limits: PageLimits,
  what: string,
): T[] {
  const problems: ValidationProblem[] = [];
  const q = readPageQuery(query, problems, limits.max_page_size, limits, 'asc');
  if (problems.length) throw validationFailed(problems, 'query is invalid');
  const list = q.order === 'desc' ? [...items].reverse() : items;
  const at = (id: string) => {
    const i = list.findIndex((x) => x.id === id);
    if (i < 0)
      throw badRequest(
        'UNKNOWN_CURSOR',
        `cursor ${JSON.stringify(id)} is not ${what} of this list`,
      );
    return i;
  };
  const start = q.after === undefined ? 0 : at(q.after) + 1;
  const end = q.before === undefined ? list.length : at(q.before);
  if (start >= end) return [];
  // only `before`: the page nearest the cursor, as the stored lists take it
  if (q.before !== undefined && q.after === undefined)
    return list.slice(Math.max(start, end - q.limit), end);
  return list.slice(start, Math.min(end, start + q.limit));
}
