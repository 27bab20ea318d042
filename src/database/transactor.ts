import { Injectable } from '@nestjs/common';
import type { Database, Statement } from 'better-sqlite3';
import { DataSource, EntityManager, QueryFailedError, QueryRunner } from 'typeorm';
import { BetterSqlite3Driver } from 'typeorm/driver/better-sqlite3/BetterSqlite3Driver';
import { BetterSqlite3QueryRunner } from 'typeorm/driver/better-sqlite3/BetterSqlite3QueryRunner';
import { QueryResult } from 'typeorm/query-runner/QueryResult';

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
  private readonly statements: SqliteStatements;

  constructor(private readonly dataSource: DataSource) {
    const driver = dataSource.driver as BetterSqlite3Driver;
    this.statements = new SqliteStatements(driver);
    this.shared = driver.createQueryRunner('master') as BetterSqlite3QueryRunner;
    const query = this.statements.query.bind(this.statements);
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
    const query = this.statements.query.bind(this.statements);
    runner.query = (...args: Parameters<QueryRunner['query']>) =>
      this.current === runner ? query(...args) : this.exclusive(() => query(...args));
    return runner;
  }
}

/**
 * Most SQL text the prepared statements kept on the connection hold, in characters: a prepared statement
 * takes ~30 bytes of memory per character of its text (a 500-row insert ~0.5 MB), so this bounds the
 * cache to ~15 MB while it keeps every row count of the group commit's inserts at 50 clients.
 */
const STATEMENT_CACHE_CHARS = 512 * 1024;

/**
 * Every statement of the SQLite connection, run on the driver directly: TypeORM's query runner adds a
 * broadcaster, a logger call and a FIFO cache of 100 prepared statements per runner, in which the group
 * commit's multi-row inserts (one text per row count) pushed each other out, so they were prepared again
 * (preparing costs as much as running). Here one LRU cache serves the connection; errors are logged and
 * thrown as the runner does (QueryFailedError), so callers and the query log see no difference.
 */
class SqliteStatements {
  private readonly cache = new Map<string, Statement>();
  private chars = 0;

  constructor(private readonly driver: BetterSqlite3Driver) {}

  query(sql: string, params: unknown[] = [], structured = false): Promise<unknown> {
    try {
      const stmt = this.statement(sql);
      const result = new QueryResult();
      if (stmt.reader) {
        result.records = stmt.all(...params);
        result.raw = result.records;
      } else {
        const run = stmt.run(...params);
        result.affected = run.changes;
        result.raw = run.lastInsertRowid;
      }
      return Promise.resolve(structured ? result : result.raw);
    } catch (e) {
      this.driver.connection.logger.logQueryError(e as Error, sql, params);
      return Promise.reject(new QueryFailedError(sql, params, e as Error));
    }
  }

  private statement(sql: string): Statement {
    const cached = this.cache.get(sql);
    if (cached) {
      // re-inserted on every use: the map's order is the order of last use
      this.cache.delete(sql);
      this.cache.set(sql, cached);
      return cached;
    }
    const stmt = (this.driver.databaseConnection as Database).prepare(sql);
    this.cache.set(sql, stmt);
    this.chars += sql.length;
    for (const old of this.cache.keys()) {
      if (this.chars <= STATEMENT_CACHE_CHARS) break;
      this.cache.delete(old);
      this.chars -= old.length;
    }
    return stmt;
  }
}
