import type { EntityManager } from 'typeorm';

type Work<T> = (em: EntityManager) => Promise<T>;

interface Pending {
  work: Work<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

/**
 * Group commit: writes that arrive while a transaction is being committed wait and go together in the
 * next one, so concurrent batches of many agents share a commit (SQLite has one connection and a
 * commit is the expensive part). Every caller's promise resolves only after its transaction committed:
 * "written before the next step" holds. A failing work fails alone: the group is retried one by one.
 */
export class GroupCommit {
  private queue: Pending[] = [];
  private flushing = false;

  constructor(private readonly transaction: <T>(work: Work<T>) => Promise<T>) {}

  run<T>(work: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ work, resolve: resolve as (v: unknown) => void, reject });
      if (!this.flushing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.flushing = true;
    while (this.queue.length > 0) {
      const group = this.queue;
      this.queue = [];
      let results: unknown[] | null = null;
      try {
        results = await this.transaction(async (em) => {
          const out: unknown[] = [];
          for (const p of group) out.push(await p.work(em));
          return out;
        });
      } catch {
        results = null;
      }
      if (results) {
        group.forEach((p, i) => p.resolve(results[i]));
        continue;
      }
      for (const p of group) {
        try {
          p.resolve(await this.transaction(p.work));
        } catch (e) {
          p.reject(e);
        }
      }
    }
    this.flushing = false;
  }
}
