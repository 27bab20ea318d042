import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { Database } from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { isUniqueViolation } from '../../../src/database/unique-violation';
import { Transactor } from '../../../src/database/transactor';

/** SQLite's one connection: a statement outside a unit never lands in (or is lost with) that unit. */
describe('Transactor on SQLite', () => {
  let dir: string;
  let ds: DataSource;
  let tx: Transactor;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'transactor-'));
    ds = new DataSource({ type: 'better-sqlite3', database: path.join(dir, 'db.sqlite') });
    await ds.initialize();
    await ds.query('CREATE TABLE t (v TEXT PRIMARY KEY)');
    tx = new Transactor(ds);
  });
  afterEach(async () => {
    await ds.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const rows = async () =>
    (await ds.query<{ v: string }[]>('SELECT v FROM t ORDER BY v')).map((r) => r.v);

  it('a write issued while a unit is open is kept when that unit rolls back', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let inside!: () => void;
    const opened = new Promise<void>((r) => (inside = r));
    const unit = tx.run(async (em) => {
      await em.query("INSERT INTO t (v) VALUES ('unit')");
      inside();
      await held;
      throw new Error('the unit fails');
    });
    await opened;
    const outside = ds.query("INSERT INTO t (v) VALUES ('outside')");
    release();
    await expect(unit).rejects.toThrow('the unit fails');
    await outside;
    expect(await rows()).toEqual(['outside']);
  });

  it('a read issued while a unit is open does not see its uncommitted writes', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const unit = tx.run(async (em) => {
      await em.query("INSERT INTO t (v) VALUES ('a')");
      await held;
      throw new Error('rolled back');
    });
    const read = rows();
    release();
    await expect(unit).rejects.toThrow('rolled back');
    expect(await read).toEqual([]);
  });

  it('a failed unit rolls back only its own writes; concurrent units all complete', async () => {
    const results = await Promise.allSettled([
      tx.run((em) => em.query("INSERT INTO t (v) VALUES ('one')")),
      tx.run(async (em) => {
        await em.query("INSERT INTO t (v) VALUES ('two')");
        await em.query("INSERT INTO t (v) VALUES ('one')"); // duplicate key: this unit fails
      }),
      tx.run((em) => em.query("INSERT INTO t (v) VALUES ('three')")),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await rows()).toEqual(['one', 'three']);
  });

  it("a failed statement rejects as TypeORM's runner does (a unique conflict is recognised)", async () => {
    await ds.query("INSERT INTO t (v) VALUES ('a')");
    const failed = await tx
      .run((em) => em.query("INSERT INTO t (v) VALUES ('a')"))
      .catch((e: unknown) => e);
    expect(isUniqueViolation(failed)).toBe(true);
  });

  it('keeps the prepared statements of many statement texts (the multi-row inserts, one per row count)', async () => {
    const insert = (n: number) =>
      tx.run((em) =>
        em.query(
          `INSERT INTO t (v) VALUES ${Array.from({ length: n }, () => '(?)').join(', ')}`,
          Array.from({ length: n }, (_, i) => `${n}-${i}-${Math.random()}`),
        ),
      );
    for (let n = 1; n <= 150; n++) await insert(n);
    const db = ds.driver as unknown as { databaseConnection: Database };
    const prepare = jest.spyOn(db.databaseConnection, 'prepare');
    for (let n = 1; n <= 150; n++) await insert(n);
    expect(prepare).not.toHaveBeenCalled();
  });

  it("refuses TypeORM's implicit transaction outside a unit (it would hold the connection unguarded)", async () => {
    const runner = ds.createQueryRunner();
    await expect(runner.startTransaction()).rejects.toThrow(/Transactor\.run/);
  });
});
