import { AsyncLocalStorage } from 'node:async_hooks';
import { QueryFailedError } from 'typeorm';

/** SQLite's SQLITE_CONSTRAINT_UNIQUE / _PRIMARYKEY, PostgreSQL's 23505. */
const UNIQUE_CODES = new Set<unknown>([
  '23505',
  'SQLITE_CONSTRAINT_UNIQUE',
  'SQLITE_CONSTRAINT_PRIMARYKEY',
]);
const isUniqueCode = (driverError: unknown) =>
  UNIQUE_CODES.has((driverError as { code?: unknown } | undefined)?.code);

/**
 * Whether a statement failed on a unique index or primary key: the repositories turn it into the
 * "already exists" answer of their intent instead of letting it surface as a 500.
 */
export function isUniqueViolation(e: unknown): boolean {
  return e instanceof QueryFailedError && isUniqueCode(e.driverError);
}

const answering = new AsyncLocalStorage<true>();

/**
 * Runs `work` whose unique-index conflicts the caller answers itself (with isUniqueViolation): the
 * query log keeps quiet about those, as they are answers, not failures. Every other error is logged.
 */
export function answeringConflicts<T>(work: () => Promise<T>): Promise<T> {
  return answering.run(true, work);
}

/** For the query logger: a driver error that is a unique conflict inside answeringConflicts. */
export function isAnsweredConflict(driverError: unknown): boolean {
  return answering.getStore() === true && isUniqueCode(driverError);
}
