import type { EntityManager } from 'typeorm';
import type { Transactor } from '../database/transactor';

interface Job {
  work: (em: EntityManager) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/** Most jobs one transaction takes. */
const MAX_BATCH = 256;

/**
 * Runs small units of work in shared transactions: jobs that arrive while a transaction is being written
 * go together in the next one. A burst of 100 decisions then costs a few commits (fsyncs) instead of 100,
 * and each job still resolves only after its transaction committed. A failing job does not fail its
 * neighbours: the batch is rolled back and retried job by job.
 */
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
