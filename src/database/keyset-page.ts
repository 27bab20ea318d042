import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';

/** A cursor: the row already looked up (its columns `created_at` and `id`, whatever the entity calls them). */
type Keyed = { id: string; created_at: number };

/**
 * One page ordered by (created_at, id), with Letta's cursors: `after` = further along the list order,
 * `before` = earlier in it (rows already looked up). With only `before`, the page nearest the cursor
 * is taken, then put back in list order.
 */
export async function keysetPage<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  alias: string,
  order: 'asc' | 'desc',
  cursors: { after: Keyed | null; before: Keyed | null },
  limit: number,
): Promise<T[]> {
  const desc = order === 'desc';
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
  const rows = await qb
    .orderBy(`${alias}.created_at`, dir)
    .addOrderBy(`${alias}.id`, dir)
    .take(limit)
    .getMany();
  return reverse ? rows.reverse() : rows;
}
