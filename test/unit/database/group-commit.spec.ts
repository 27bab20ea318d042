import type { EntityManager } from 'typeorm';
import type { Transactor } from '../../../src/database/transactor';
import { GroupCommit } from '../../../src/database/group-commit';

/** A transactor that records each committed transaction's jobs (a failing job rolls its transaction back). */
function fakeTransactor() {
  const transactions: string[][] = [];
  let attempts = 0;
  let current: string[] | null = null;
  let tail: Promise<unknown> = Promise.resolve();
  const tx = {
    run<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
      const next = tail.then(async () => {
        attempts++;
        current = [];
        try {
          const log = (s: string) => current!.push(s);
          const r = await work({
            log,
            createQueryBuilder: () => insertBuilder(log),
          } as unknown as EntityManager);
          transactions.push(current);
          return r;
        } finally {
          current = null;
        }
      });
      tail = next.catch(() => undefined);
      return next;
    },
  };
  return { tx: tx as unknown as Transactor, transactions, attempts: () => attempts };
}

/** The insert query builder chain, logging each statement as `<table> <rows> [upsert on <key>]`. */
function insertBuilder(log: (s: string) => void) {
  let stmt = '';
  const qb = {
    insert: () => qb,
    into: (entity: string) => ((stmt = entity), qb),
    values: (rows: { name: string }[]) => ((stmt += ' ' + rows.map((r) => r.name).join('+')), qb),
    orUpdate: (_cols: string[], key: string[]) => ((stmt += ` upsert on ${key.join()}`), qb),
    updateEntity: () => qb,
    execute: () => {
      if (stmt.includes('dup')) return Promise.reject(new Error('UNIQUE constraint failed'));
      log(stmt);
      return Promise.resolve();
    },
  };
  return qb;
}

const job =
  (name: string, fail = false) =>
  async (em: EntityManager) => {
    await Promise.resolve();
    if (fail) throw new Error(`${name} failed`);
    (em as unknown as { log(s: string): void }).log(name);
    return name.toUpperCase();
  };

describe('GroupCommit', () => {
  it('a lone job runs in its own transaction', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    await expect(g.run(job('a'))).resolves.toBe('A');
    expect(transactions).toEqual([['a']]);
  });

  it('jobs arriving during a transaction share the next one, each getting its own result', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((n) => g.run(job(n))));
    expect(results).toEqual(['A', 'B', 'C', 'D']);
    expect(transactions).toEqual([['a'], ['b', 'c', 'd']]);
  });

  it('a failing job fails alone: its batch is retried job by job', async () => {
    const { tx, transactions, attempts } = fakeTransactor();
    const g = new GroupCommit(tx);
    const outcomes = await Promise.allSettled([
      g.run(job('a')),
      g.run(job('b')),
      g.run(job('bad', true)),
      g.run(job('c')),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'fulfilled',
      'rejected',
      'fulfilled',
    ]);
    // the shared transaction was rolled back (not recorded) and the good jobs committed one by one
    expect(transactions).toEqual([['a'], ['b'], ['c']]);
    // a alone, the failed group [b, bad, c], then b, bad and c one by one
    expect(attempts()).toBe(1 + 1 + 3);
  });

  it('a transaction takes at most 256 jobs', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const names = Array.from({ length: 300 }, (_, i) => `j${i}`);
    await Promise.all(names.map((n) => g.run(job(n))));
    expect(transactions.map((t) => t.length)).toEqual([1, 256, 43]);
    expect(transactions.flat()).toEqual(names);
  });

  it('inserts of a group share one statement per table and kind; a duplicate fails only its own job', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const row = (name: string) => ({ name });
    const outcomes = await Promise.allSettled([
      g.run(job('first')),
      g.insert(
        { entity: 'messages', rows: [row('m1'), row('m2')] },
        { entity: 'steps', rows: [row('s1')] },
      ),
      g.run(job('update')),
      g.insert({ entity: 'messages', rows: [row('m3')] }),
      g.insert({ entity: 'batches', rows: [row('b1')], conflictPaths: ['batch_id'] }),
      g.insert({ entity: 'batches', rows: [row('b2')], conflictPaths: ['batch_id'] }),
    ]);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(transactions).toEqual([
      ['first'],
      ['messages m1+m2+m3', 'steps s1', 'batches b1+b2 upsert on batch_id', 'update'],
    ]);

    transactions.length = 0;
    const again = await Promise.allSettled([
      g.run(job('first')),
      g.insert({ entity: 'claims', rows: [row('c1')] }),
      g.insert({ entity: 'claims', rows: [row('dup')] }),
    ]);
    expect(again.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    expect(transactions).toEqual([['first'], ['claims c1']]);
  });
});
