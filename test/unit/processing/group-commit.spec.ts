import type { EntityManager } from 'typeorm';
import { GroupCommit } from '../../../src/processing/group-commit';

describe('GroupCommit', () => {
  it('writes that arrive during a commit share the next one; each caller gets its result', async () => {
    const commits: string[][] = [];
    let current: string[] = [];
    const gc = new GroupCommit(async (work) => {
      current = [];
      const out = await work({} as EntityManager);
      commits.push(current);
      return out;
    });
    const w = (name: string) => () => {
      current.push(name);
      return Promise.resolve(name.toUpperCase());
    };
    const results = await Promise.all([gc.run(w('a')), gc.run(w('b')), gc.run(w('c'))]);
    expect(results).toEqual(['A', 'B', 'C']);
    expect(commits).toEqual([['a'], ['b', 'c']]);
  });

  it('a failing write fails alone: the group is retried one by one', async () => {
    let attempts = 0;
    const gc = new GroupCommit(async (work) => {
      attempts++;
      return work({} as EntityManager);
    });
    const ok = () => Promise.resolve('ok');
    const bad = () => Promise.reject(new Error('constraint'));
    const first = gc.run(ok);
    const results = await Promise.allSettled([gc.run(ok), gc.run(bad), gc.run(ok)]);
    await first;
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(attempts).toBe(1 + 1 + 3);
  });
});
