import { Logger } from '@nestjs/common';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { QueryLogger } from '../../../src/database/query-logger';
import { answeringConflicts, isUniqueViolation } from '../../../src/database/unique-violation';

/** Expected conflicts are answers, not failures: quiet; every other failed statement is logged. */
describe('QueryLogger', () => {
  let dir: string;
  let ds: DataSource;
  let logged: jest.SpyInstance;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'query-logger-'));
    ds = new DataSource({
      type: 'better-sqlite3',
      database: path.join(dir, 'db.sqlite'),
      logger: new QueryLogger(['error']),
    });
    await ds.initialize();
    await ds.query('CREATE TABLE t (name TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0)');
    await ds.query('INSERT INTO t (name) VALUES (?)', ['taken']);
    logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
  });
  afterEach(async () => {
    jest.restoreAllMocks();
    await ds.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const insertTaken = () => ds.query('INSERT INTO t (name) VALUES (?)', ['taken']);
  const failure = (p: Promise<unknown>) =>
    p.then(
      () => null,
      (e: unknown) => e,
    );

  it('a unique conflict the caller answers is not logged', async () => {
    const e = await failure(answeringConflicts(insertTaken));
    expect(isUniqueViolation(e)).toBe(true);
    expect(logged).not.toHaveBeenCalled();
  });

  it('the same conflict elsewhere is logged, with the SQL and the error but not the parameters', async () => {
    expect(isUniqueViolation(await failure(insertTaken()))).toBe(true);
    expect(logged).toHaveBeenCalledTimes(1);
    const line = String(logged.mock.calls[0][0]);
    expect(line).toMatch(
      /^query failed: INSERT INTO t \(name\) VALUES \(\?\) -- UNIQUE constraint failed/,
    );
    expect(line).not.toContain('taken');
  });

  it('any other failure inside answeringConflicts is logged (another constraint)', async () => {
    await failure(
      answeringConflicts(() => ds.query("INSERT INTO t (name, n) VALUES ('new', NULL)")),
    );
    expect(logged).toHaveBeenCalledTimes(1);
    expect(String(logged.mock.calls[0][0])).toContain('NOT NULL constraint failed: t.n');
  });
});
