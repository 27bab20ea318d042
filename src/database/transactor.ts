import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager, QueryRunner } from 'typeorm';
import { BetterSqlite3Driver } from 'typeorm/driver/better-sqlite3/BetterSqlite3Driver';
import { BetterSqlite3QueryRunner } from 'typeorm/driver/better-sqlite3/BetterSqlite3QueryRunner';

/**
 * Runs a unit of work in a transaction of its own. PostgreSQL gives each transaction its own pooled
 * connection. SQLite has one connection (TypeORM hands every caller the same query runner), so there
 * the Transactor gives the connection to one unit at a time; see SqliteGate.
 */
@Injectable()
export class Transactor {
  private readonly gate: SqliteGate | null;

  constructor(private readonly dataSource: DataSource) {
    this.gate =
      dataSource.driver instanceof BetterSqlite3Driver ? new SqliteGate(dataSource) : null;
  }

  /** Told each unit's latency in seconds, waiting for its turn included (the metrics histogram). */
  observe: ((seconds: number) => void) | null = null;

  async run<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await (this.gate ? this.gate.transaction(work) : this.dataSource.transaction(work));
    } finally {
      this.observe?.((performance.now() - started) / 1000);
    }
  }
}

const noop = () => undefined;
/** Longest run of units without letting the event loop handle I/O. */
const SLICE_MS = 2;

/**
 * One unit of work at a time on SQLite's single connection, so that no statement runs inside another
 * unit's transaction (where a rollback of that unit would take it along):
 * - a transaction holds the connection from BEGIN to COMMIT or ROLLBACK and runs its statements on a
 *   query runner of its own (sharing the connection and the prepared-statement cache);
 * - every other statement (reads, single-statement writes through a repository) waits its turn and runs
 *   alone, in SQLite's autocommit;
 * - TypeORM's implicit transactions (`save` and `remove` outside a unit) are refused: they would need the
 *   connection across awaits without holding it, so multi-statement writes go through `Transactor.run`.
 * A unit must therefore use its own EntityManager for every statement: one issued elsewhere waits for
 * the unit to end, so the unit would wait for itself.
 */
class SqliteGate {
  private tail: Promise<unknown> = Promise.resolve();
  private current: QueryRunner | null = null;
  private sliceStart = performance.now();
  private readonly shared: BetterSqlite3QueryRunner;

  constructor(private readonly dataSource: DataSource) {
    const driver = dataSource.driver as BetterSqlite3Driver;
    this.shared = driver.createQueryRunner('master') as BetterSqlite3QueryRunner;
    const query = this.shared.query.bind(this.shared);
    this.shared.query = (...args: Parameters<QueryRunner['query']>) =>
      this.exclusive(() => query(...args));
    this.shared.startTransaction = () =>
      Promise.reject(
        new Error('a transaction on SQLite must go through Transactor.run (one unit at a time)'),
      );
  }

  transaction<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      const runner = this.unitRunner();
      this.current = runner;
      try {
        await runner.startTransaction();
        try {
          const result = await work(this.dataSource.createEntityManager(runner));
          await runner.commitTransaction();
          return result;
        } catch (e) {
          if (runner.isTransactionActive) await runner.rollbackTransaction();
          throw e;
        }
      } finally {
        this.current = null;
      }
    });
  }

  /** Runs `fn` when every unit before it has finished; the next one waits for it. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.tail.then(() => this.turn()).then(fn);
    this.tail = result.then(noop, noop);
    return result;
  }

  /**
   * The driver is synchronous, so a queue of units runs as one chain of microtasks, during which no
   * I/O is handled (a tool request is not sent, a decision frame not read). Past a time slice the next
   * unit waits for the event loop's next turn.
   */
  private turn(): Promise<void> | void {
    if (performance.now() - this.sliceStart < SLICE_MS) return;
    return new Promise((resolve) =>
      setImmediate(() => {
        this.sliceStart = performance.now();
        resolve();
      }),
    );
  }

  /** A query runner for one transaction; a statement reaching it after its unit ended queues like any other. */
  private unitRunner(): QueryRunner {
    const runner = new BetterSqlite3QueryRunner(this.dataSource.driver as BetterSqlite3Driver);
    // one prepared-statement cache for the connection (preparing is a large share of a statement's cost)
    (runner as unknown as { stmtCache: unknown }).stmtCache = (
      this.shared as unknown as { stmtCache: unknown }
    ).stmtCache;
    const query = runner.query.bind(runner);
    runner.query = (...args: Parameters<QueryRunner['query']>) =>
      this.current === runner ? query(...args) : this.exclusive(() => query(...args));
    return runner;
  }
}
