import { readLimit, type InputLimits } from '../core/limits';
import { approxBytes } from './approx-bytes';
import { badRequest, validationFailed, type ValidationProblem } from './domain-error';

/**
 * What one page may hold: `limit` items (`limits.max_page_size`), and their estimated size together
 * (`approxBytes`), `maxBytes` (`limits.max_page_bytes`). Past the bytes a page ends early: a shorter page.
 */
export interface PageBounds {
  limit: number;
  maxBytes: number;
}

/** Letta's page parameters of a list: `limit`, `order`, and the `before` / `after` cursors (ids). */
export interface PageQuery extends PageBounds {
  order: 'asc' | 'desc';
  before?: string;
  after?: string;
}

type PageLimits = Pick<InputLimits, 'max_page_size' | 'max_page_bytes'>;

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
    maxBytes: limits.max_page_bytes,
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
 * The running size of a page being filled, items weighed one by one (`approxBytes`): an item is taken
 * while the page's items together stay within `maxBytes`, and the first always is (it is bounded by its
 * own input bounds), so a client paging on always gets somewhere.
 */
export class PageBytes {
  private bytes = 0;
  private taken = 0;

  constructor(private readonly maxBytes: number) {}

  /** Weighs the item; false once it would pass the budget (it is left out, and every later one). */
  take(item: unknown): boolean {
    this.bytes += approxBytes(item);
    if (this.bytes > this.maxBytes && this.taken > 0) return false;
    this.taken++;
    return true;
  }

  /** The bytes left (none once spent). */
  get left(): number {
    return Math.max(0, this.maxBytes - this.bytes);
  }

  get spent(): boolean {
    return this.bytes >= this.maxBytes;
  }

  /** How many more items of the average size so far fit (at least one). */
  itemsLeft(): number {
    if (this.taken === 0) return 1;
    return Math.max(1, Math.ceil((this.left * this.taken) / Math.max(this.bytes, 1)));
  }
}

/** A page taken back from a `before` cursor (no `after`): its items nearest the cursor are at its end. */
export const takenBack = (q: { before?: unknown; after?: unknown }): boolean =>
  !!q.before && !q.after;

/**
 * The items of a page that fit `maxBytes` (PageBytes): a page is cut where its budget runs out, on the
 * side away from its cursor (its end; with `fromEnd`, a page taken back from a `before` cursor, its
 * start), so a client paging on from the page's last (first) id misses nothing.
 */
export function fitPage<T>(items: readonly T[], maxBytes: number, fromEnd = false): T[] {
  const budget = new PageBytes(maxBytes);
  const n = items.length;
  for (let i = 0; i < n; i++)
    if (!budget.take(items[fromEnd ? n - 1 - i : i]))
      return fromEnd ? items.slice(n - i) : items.slice(0, i);
  return items.slice();
}

/** fitPage for items loaded one at a time (`load`): nothing is loaded past the page's bytes. */
export async function fillPage<T, U>(
  items: readonly T[],
  maxBytes: number,
  fromEnd: boolean,
  load: (item: T) => Promise<U>,
): Promise<U[]> {
  const budget = new PageBytes(maxBytes);
  const out: U[] = [];
  for (const item of fromEnd ? [...items].reverse() : items) {
    const loaded = await load(item);
    if (!budget.take(loaded)) break;
    out.push(loaded);
  }
  return fromEnd ? out.reverse() : out;
}

/**
 * Items oldest first by `createdAt`, as Letta orders its lists by `created_at`; `null` (a built-in tool,
 * there before anything a tenant made) is oldest of all. Equals keep their given order.
 */
export function oldestFirst<T>(items: readonly T[], createdAt: (item: T) => number | null): T[] {
  const at = (x: T) => createdAt(x) ?? -Infinity;
  // Array.prototype.sort is stable: equals keep their order
  return [...items].sort((a, b) => (at(a) === at(b) ? 0 : at(a) < at(b) ? -1 : 1));
}

/**
 * One page of a list the server holds whole (an agent's tools or blocks, a run's messages or steps):
 * `order=asc` is the list's own order, `desc` the reverse; `after` / `before` are ids of the list, relative
 * to that order, as the stored lists' cursors are (the SDK's auto-pagination sends `after=<last id>` until
 * a page is empty); without `order`, `defaultOrder` (Letta's default for that list); `limit` defaults to the whole list up to `limits.max_page_size`, and the page ends
 * early past `limits.max_page_bytes` (fitPage). A cursor that is not in the list is 400 `UNKNOWN_CURSOR`.
 * Query problems are 400 `VALIDATION_FAILED`.
 */
export function pageOfList<T extends { id: string }>(
  items: readonly T[],
  query: Record<string, unknown>,
  limits: PageLimits,
  what: string,
  defaultOrder: 'asc' | 'desc' = 'asc',
): T[] {
  const problems: ValidationProblem[] = [];
  const q = readPageQuery(query, problems, limits.max_page_size, limits, defaultOrder);
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
  if (takenBack(q))
    return fitPage(list.slice(Math.max(start, end - q.limit), end), q.maxBytes, true);
  return fitPage(list.slice(start, Math.min(end, start + q.limit)), q.maxBytes);
}
