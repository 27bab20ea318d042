import { Injectable } from '@nestjs/common';
import type { EntityManager, EntityTarget, ObjectLiteral } from 'typeorm';
import { insertRows } from './raw-writes';
import { Transactor } from './transactor';

/** Rows for one table. */
export interface InsertSet {
  entity: EntityTarget<ObjectLiteral>;
  rows: ObjectLiteral[];
  /** An upsert: on a conflict on these (primary key) columns the row's other given columns replace the stored ones. */
  conflictPaths?: string[];
}

interface Job {
  /** Inserts and upserts, merged with the other jobs' rows into one multi-row statement per table. */
  inserts: InsertSet[];
  /** Runs before any insert of the group (a lease check): when it throws, the job fails with its error. */
  fence: ((em: EntityManager) => Promise<void>) | null;
  work: ((em: EntityManager) => Promise<unknown>) | null;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** Most jobs one transaction takes (bounds a transaction's size and its rollback-and-retry cost). */
const MAX_BATCH = 256;
/** Most rows one INSERT statement carries (well under SQLite's and PostgreSQL's bound-parameter limits). */
const MAX_ROWS_PER_INSERT = 500;

/**
 * Group commit, one for the whole app: small units of work (a run's messages, a tool-call claim, a
 * consent decision, …) that arrive while a transaction is being written go together in the next one.
 * SQLite has one connection, and every statement and commit on it is a round trip, so concurrent
 * conversations then share commits, and their inserts share statements: the rows of every `insert`
 * job of a group go into one multi-row INSERT (or upsert) per table. Every job resolves only after its
 * transaction committed ("written before the next step" holds), and its own writes stay atomic.
 *
 * Jobs of one group run in no particular order (fences first, then inserts, then work): all of them were
 * issued before any of them committed, so none depends on another; a caller that needs an order awaits
 * the first write.
 * A failing job does not fail its neighbours: the group is rolled back and retried job by job, so a
 * job must only touch the database inside the transaction (it may run twice). Jobs must not call
 * `run` or `insert` from inside `work` (deadlock).
 */
@Injectable()
export class GroupCommit {
  private queue: Job[] = [];
  private flushing = false;

  constructor(private readonly tx: Transactor) {}

  run<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.enqueue([], null, work) as Promise<T>;
  }

  /** Inserts (or upserts) rows, several tables atomically; a duplicate key rejects as the INSERT would. */
  async insert(...sets: InsertSet[]): Promise<void> {
    await this.enqueue(
      sets.filter((s) => s.rows.length > 0),
      null,
      null,
    );
  }

  /** As `insert`, with `check` in the same transaction: when it throws, the rows are not written. */
  async insertChecked(
    check: (em: EntityManager) => Promise<void>,
    ...sets: InsertSet[]
  ): Promise<void> {
    await this.enqueue(
      sets.filter((s) => s.rows.length > 0),
      null,
      check,
    );
  }

  /**
   * As `insert`, with `fence` (a lease check) run in the same transaction before any insert of the group:
   * when it throws, the rows are not written and the job fails with the fence's error, never with a
   * conflict between its rows and those of whoever the fence answers for now.
   */
  async insertFenced(
    fence: (em: EntityManager) => Promise<void>,
    ...sets: InsertSet[]
  ): Promise<void> {
    await this.enqueue(
      sets.filter((s) => s.rows.length > 0),
      fence,
      null,
    );
  }

  private enqueue(inserts: InsertSet[], fence: Job['fence'], work: Job['work']): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.queue.push({ inserts, fence, work, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        let jobs: Job[] = [];
        try {
          // taken once the connection is ours: the jobs that arrived while waiting for it join the group
          const results = await this.tx.run((em) =>
            execute(em, (jobs = this.queue.splice(0, MAX_BATCH))),
          );
          jobs.forEach((j, i) => j.resolve(results[i]));
        } catch (e) {
          // no connection (the work never ran): the jobs waiting fail with it
          if (jobs.length === 0) jobs = this.queue.splice(0, MAX_BATCH);
          if (jobs.length === 1) jobs[0].reject(e);
          else for (const j of jobs) await this.one(j);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async one(j: Job): Promise<void> {
    try {
      const [result] = await this.tx.run((em) => execute(em, [j]));
      j.resolve(result);
    } catch (e) {
      j.reject(e);
    }
  }
}

/**
 * One group in one transaction: the jobs' fences, the merged inserts, then each job's work; the jobs'
 * results in order.
 */
async function execute(em: EntityManager, jobs: Job[]): Promise<unknown[]> {
  for (const j of jobs) if (j.fence) await j.fence(em);
  const byTable = new Map<EntityTarget<ObjectLiteral>, Map<string, InsertSet>>();
  for (const j of jobs) {
    for (const set of j.inserts) {
      let kinds = byTable.get(set.entity);
      if (!kinds) byTable.set(set.entity, (kinds = new Map<string, InsertSet>()));
      const kind = set.conflictPaths?.join() ?? '';
      const merged = kinds.get(kind);
      if (merged) merged.rows.push(...set.rows);
      else kinds.set(kind, { ...set, rows: [...set.rows] });
    }
  }
  for (const kinds of byTable.values()) {
    for (const { entity, rows, conflictPaths } of kinds.values()) {
      for (let i = 0; i < rows.length; i += MAX_ROWS_PER_INSERT) {
        await insertRows(em, entity, rows.slice(i, i + MAX_ROWS_PER_INSERT), conflictPaths);
      }
    }
  }
  const results: unknown[] = [];
  for (const j of jobs) results.push(j.work ? await j.work(em) : undefined);
  return results;
}
