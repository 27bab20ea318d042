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
          const r = await work(fakeManager(log));
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

/**
 * An entity manager whose tables have one column, `name`, and which logs each INSERT statement as
 * `<table> <rows> [upsert on <key>]`; a row named `dup` fails its statement.
 */
function fakeManager(log: (s: string) => void): EntityManager {
  const name = { propertyName: 'name', databaseName: 'name' };
  return {
    log,
    connection: {
      driver: {
        options: { type: 'better-sqlite3' },
        preparePersistentValue: (v: unknown) => v,
        escape: (n: string) => `"${n}"`,
      },
      getMetadata: (entity: string) => ({
        tableName: entity,
        columns: [name],
        findColumnWithPropertyName: (p: string) => (p === 'name' ? name : undefined),
      }),
    },
    query: (sql: string, params: string[]) => {
      if (params.includes('dup')) return Promise.reject(new Error('UNIQUE constraint failed'));
      const table = /INSERT INTO "(\w+)"/.exec(sql)![1];
      const key = /ON CONFLICT \("(\w+)"\)/.exec(sql)?.[1];
      log(`${table} ${params.join('+')}${key ? ` upsert on ${key}` : ''}`);
      return Promise.resolve();
    },
  } as unknown as EntityManager;
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

  it('jobs waiting for the connection share a transaction, each getting its own result', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const results = await Promise.all(['a', 'b', 'c', 'd'].map((n) => g.run(job(n))));
    expect(results).toEqual(['A', 'B', 'C', 'D']);
    expect(transactions).toEqual([['a', 'b', 'c', 'd']]);
  });

  it('jobs arriving during a transaction share the next one', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const first = g.run(async (em) => {
      await held;
      return job('a')(em);
    });
    await new Promise((r) => setImmediate(r)); // a's transaction has begun
    const later = ['b', 'c'].map((n) => g.run(job(n)));
    release();
    expect(await Promise.all([first, ...later])).toEqual(['A', 'B', 'C']);
    expect(transactions).toEqual([['a'], ['b', 'c']]);
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
    // the failed group [a, b, bad, c], then each job alone
    expect(attempts()).toBe(1 + 4);
  });

  it('a transaction takes at most 256 jobs', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const names = Array.from({ length: 300 }, (_, i) => `j${i}`);
    await Promise.all(names.map((n) => g.run(job(n))));
    expect(transactions.map((t) => t.length)).toEqual([256, 44]);
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
      g.insert({ entity: 'batches', rows: [row('b1')], conflictPaths: ['name'] }),
      g.insert({ entity: 'batches', rows: [row('b2')], conflictPaths: ['name'] }),
    ]);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(transactions).toEqual([
      ['messages m1+m2+m3', 'steps s1', 'batches b1+b2 upsert on name', 'first', 'update'],
    ]);

    transactions.length = 0;
    const again = await Promise.allSettled([
      g.run(job('first')),
      g.insert({ entity: 'claims', rows: [row('c1')] }),
      g.insert({ entity: 'claims', rows: [row('dup')] }),
    ]);
    expect(again.map((o) => o.status)).toEqual(['fulfilled', 'fulfilled', 'rejected']);
    // the group failed on the duplicate; each job then ran alone
    expect(transactions).toEqual([['first'], ['claims c1']]);
  });

  it('a fenced insert’s fence runs before any insert of its group: a refused fence fails its job with its own error, even when its rows would conflict', async () => {
    const { tx, transactions } = fakeTransactor();
    const g = new GroupCommit(tx);
    const row = (name: string) => ({ name });
    const fence =
      (name: string, refused = false) =>
      async (em: EntityManager) => {
        await job(name, refused)(em);
      };
    const outcomes = await Promise.allSettled([
      g.insert({ entity: 'messages', rows: [row('m1')] }),
      g.insertFenced(fence('lease ok'), { entity: 'messages', rows: [row('m2')] }),
      g.run(job('update')),
    ]);
    expect(outcomes.every((o) => o.status === 'fulfilled')).toBe(true);
    expect(transactions).toEqual([['lease ok', 'messages m1+m2', 'update']]);

    transactions.length = 0;
    const stale = await Promise.allSettled([
      g.insert({ entity: 'messages', rows: [row('m3')] }),
      // its row's key is taken by the new holder: the fence answers first
      g.insertFenced(fence('lease lost', true), { entity: 'messages', rows: [row('dup')] }),
    ]);
    expect(stale[0].status).toBe('fulfilled');
    expect(stale[1]).toMatchObject({ status: 'rejected', reason: new Error('lease lost failed') });
    expect(transactions).toEqual([['messages m3']]);
  });
});
