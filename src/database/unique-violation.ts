import { QueryFailedError } from 'typeorm';

/**
 * Whether a statement failed on a unique index or primary key (SQLite's SQLITE_CONSTRAINT_UNIQUE or
 * _PRIMARYKEY, PostgreSQL's 23505): the repositories turn it into the "already exists" answer of their
 * intent instead of letting it surface as a 500.
 */
export function isUniqueViolation(e: unknown): boolean {
  if (!(e instanceof QueryFailedError)) return false;
  const code = (e.driverError as { code?: unknown } | undefined)?.code;
  return (
    code === '23505' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY'
  );
}
