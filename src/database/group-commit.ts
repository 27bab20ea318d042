import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { Transactor } from './transactor';

interface Job {
  work: (em: EntityManager) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** Most jobs one transaction takes (bounds a transaction's size and its rollback-and-retry cost). */
const MAX_BATCH = 256;

/**
 * Group commit, one for the whole app: small units of work (a run's messages, a tool-call claim, a
 * consent decision, …) that arrive while a transaction is being written go together in the next one.
 * SQLite has one connection and a commit is the expensive part, so concurrent conversations then share
 * commits instead of queueing one transaction each. Every job resolves only after its transaction
 * committed ("written before the next step" holds), and its own writes stay atomic. A failing job does
 * not fail its neighbours: the group is rolled back and retried job by job, so a job must only touch the
 * database inside `work` (it may run twice). Jobs must not call `run` from inside `work` (deadlock).
 */
@Injectable()
export class GroupCommit {
  private queue: Job[] = [];
  private flushing = false;

  constructor(private readonly tx: Transactor) {}

  run<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.queue.length > 0) {
        const jobs = this.queue.splice(0, MAX_BATCH);
        if (jobs.length === 1) {
          await this.one(jobs[0]);
          continue;
        }
        const results: unknown[] = [];
        try {
          await this.tx.run(async (em) => {
            for (const j of jobs) results.push(await j.work(em));
          });
          jobs.forEach((j, i) => j.resolve(results[i]));
        } catch {
          for (const j of jobs) await this.one(j);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  private async one(j: Job): Promise<void> {
    try {
      j.resolve(await this.tx.run(j.work));
    } catch (e) {
      j.reject(e);
    }
  }
}
