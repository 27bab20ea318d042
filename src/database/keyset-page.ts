import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { PageBytes, type PageBounds } from '../common/list-page';

/** A cursor: the row already looked up (its columns `created_at` and `id`, whatever the entity calls them). */
type Keyed = { id: string; created_at: number };

/** Rows read at once while a page is filled: a page past its byte budget reads at most this many more. */
const CHUNK_ROWS = 32;

/**
 * The rows of a filtered, ordered query (no limit of its own), up to `limit` rows and `maxBytes` of
 * them (`approxBytes`, at least one row), so a page of large rows is never read whole: pages of more
 * than CHUNK_ROWS rows take their ids first (a small read), then the rows in chunks, sized by the rows
 * read so far. `complete` adds what a row is shown with (an agent's blocks) before it is weighed.
 */
export async function readWithin<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  alias: string,
  page: PageBounds,
  complete?: (rows: T[]) => Promise<void>,
): Promise<T[]> {
  const budget = new PageBytes(page.maxBytes);
  const out: T[] = [];
  // true once the page is full
  const add = async (rows: T[]) => {
    if (complete && rows.length) await complete(rows);
    for (const row of rows) {
      if (!budget.take(row)) return true;
      out.push(row);
    }
    return budget.spent;
  };
  if (page.limit <= CHUNK_ROWS) {
    await add(await qb.clone().limit(page.limit).getMany());
    return out;
  }
  const ids = (
    await qb.clone().select(`${alias}.id`, 'id').limit(page.limit).getRawMany<{ id: unknown }>()
  ).map((r) => r.id);
  for (let at = 0, take = CHUNK_ROWS; at < ids.length; at += take) {
    if (at > 0) take = budget.itemsLeft();
    const chunk = ids.slice(at, at + take);
    const rows = await qb
      .clone()
      .andWhere(`${alias}.id IN (:...pageChunkIds)`, { pageChunkIds: chunk })
      .getMany();
    if (await add(rows)) break;
  }
  return out;
}

/**
 * One page ordered by (created_at, id), with Letta's cursors: `after` = further along the list order,
 * `before` = earlier in it (rows already looked up). With only `before`, the page nearest the cursor
 * is taken, then put back in list order. Past `page.maxBytes` the page ends early (readWithin): on the
 * side away from its cursor.
 */
export async function keysetPage<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  alias: string,
  page: PageBounds & { order: 'asc' | 'desc' },
  cursors: { after: Keyed | null; before: Keyed | null },
  complete?: (rows: T[]) => Promise<void>,
): Promise<T[]> {
  const desc = page.order === 'desc';
  const beyond = (c: Keyed, forward: boolean, key: string) => {
    const op = forward === desc ? '<' : '>';
    qb.andWhere(
      `(${alias}.created_at ${op} :${key}At OR (${alias}.created_at = :${key}At AND ${alias}.id ${op} :${key}Id))`,
      { [`${key}At`]: c.created_at, [`${key}Id`]: c.id },
    );
  };
  if (cursors.after) beyond(cursors.after, true, 'after');
  if (cursors.before) beyond(cursors.before, false, 'before');
  const reverse = cursors.before !== null && cursors.after === null;
  const dir = desc !== reverse ? 'DESC' : 'ASC';
  qb.orderBy(`${alias}.created_at`, dir).addOrderBy(`${alias}.id`, dir);
  const rows = await readWithin(qb, alias, page, complete);
  return reverse ? rows.reverse() : rows;
}
