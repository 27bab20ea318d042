import { LRUCache } from 'lru-cache';
import { approxBytes } from '../common/approx-bytes';

/**
 * Reads of one table kept for the process that is the database's only writer (SQLite; pass `enabled`
 * false on PostgreSQL, where another instance's write would not reach it). Every write of the table goes
 * through `write`, which counts before and after it: a read that began before a write ended is stored
 * with the count it began at, which no longer matches, so it is never served.
 */
export class WriteCountedCache<V extends object> {
  private writes = 0;
  private readonly entries: LRUCache<string, { writes: number; value: V }> | null;

  /** `maxBytes`: the entries' estimated size together (`approxBytes`); a larger one is not kept. */
  constructor(enabled: boolean, maxBytes: number, max = 10_000) {
    this.entries = enabled
      ? new LRUCache({
          max,
          maxSize: maxBytes,
          sizeCalculation: (e) => Math.max(1, approxBytes(e.value)),
        })
      : null;
  }

  async read(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries?.get(key);
    if (hit && hit.writes === this.writes) return hit.value;
    const writes = this.writes;
    const value = await load();
    this.entries?.set(key, { writes, value });
    return value;
  }

  async write<T>(work: () => Promise<T>): Promise<T> {
    this.writes++;
    try {
      return await work();
    } finally {
      this.writes++;
    }
  }
}
