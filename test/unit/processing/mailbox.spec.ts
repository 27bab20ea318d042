import { Mailbox, MailboxJob } from '../../../src/processing/mailbox';

/** A handler whose jobs finish when the test says so. */
function harness() {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const box = new Mailbox(
    (job: MailboxJob) =>
      new Promise<void>((resolve) => {
        started.push(job.runId);
        finish.set(job.runId, resolve);
      }),
  );
  const done = async (runId: string) => {
    finish.get(runId)!();
    await new Promise((r) => setImmediate(r));
  };
  return { box, started, done };
}

describe('Mailbox', () => {
  it('one job at a time per agent, in arrival order', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { runId: 'r1', priority: false, createdAt: 1 });
    box.enqueue('a', { runId: 'r2', priority: false, createdAt: 2 });
    box.enqueue('a', { runId: 'r3', priority: false, createdAt: 3 });
    expect(started).toEqual(['r1']);
    await done('r1');
    expect(started).toEqual(['r1', 'r2']);
    await done('r2');
    await done('r3');
    expect(started).toEqual(['r1', 'r2', 'r3']);
  });

  it('priority jobs (continuations) go ahead of waiting ones, after earlier priority jobs', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { runId: 'busy', priority: false, createdAt: 4 });
    box.enqueue('a', { runId: 'user1', priority: false, createdAt: 5 });
    box.enqueue('a', { runId: 'resume1', priority: true, createdAt: 6 });
    box.enqueue('a', { runId: 'resume2', priority: true, createdAt: 7 });
    for (const id of ['busy', 'resume1', 'resume2', 'user1']) await done(id);
    expect(started).toEqual(['busy', 'resume1', 'resume2', 'user1']);
  });

  it('runs stored on other instances join the waiting ones in the order they were stored', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { runId: 'busy', priority: false, createdAt: 10 });
    box.enqueue('a', { runId: 'late', priority: false, createdAt: 30 });
    box.enqueue('a', { runId: 'remote', priority: false, createdAt: 20 });
    box.enqueue('a', { runId: 'resume', priority: true, createdAt: 40 });
    for (const id of ['busy', 'resume', 'remote', 'late']) await done(id);
    expect(started).toEqual(['busy', 'resume', 'remote', 'late']);
    expect(box.dropAgent('a')).toEqual([]);
  });

  it('different agents run at the same time', () => {
    const { box, started } = harness();
    box.enqueue('a', { runId: 'a1', priority: false, createdAt: 8 });
    box.enqueue('b', { runId: 'b1', priority: false, createdAt: 9 });
    expect(started).toEqual(['a1', 'b1']);
  });

  it('remove drops a waiting job; close stops intake and whenIdle waits for running jobs', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { runId: 'r1', priority: false, createdAt: 10 });
    box.enqueue('a', { runId: 'r2', priority: false, createdAt: 11 });
    box.enqueue('a', { runId: 'r3', priority: false, createdAt: 12 });
    expect(box.remove('a', 'r2')).toBe(true);
    expect(box.remove('a', 'r1')).toBe(false); // running
    box.close();
    expect(box.enqueue('a', { runId: 'r4', priority: false, createdAt: 13 })).toBe(false);
    let idle = false;
    const waiting = box.whenIdle().then(() => (idle = true));
    await new Promise((r) => setImmediate(r));
    expect(idle).toBe(false);
    await done('r1');
    await waiting;
    expect(started).toEqual(['r1']); // r3 stays queued (its run row stays `created`)
  });

  it("a turn runs in the agent's order instead of the handler; dropped turns are told", async () => {
    const { box, started, done } = harness();
    const log: string[] = [];
    const turn = (name: string) => ({
      run: () => Promise.resolve(void log.push(`ran ${name}`)),
      abandon: () => void log.push(`abandoned ${name}`),
    });
    box.enqueue('a', { runId: 'r1', priority: false, createdAt: 1 });
    box.enqueue('a', { runId: 't1', priority: false, createdAt: 2, turn: turn('t1') });
    box.enqueue('a', { runId: 'r2', priority: false, createdAt: 3 });
    box.enqueue('a', { runId: 't2', priority: false, createdAt: 4, turn: turn('t2') });
    expect(log).toEqual([]);
    await done('r1');
    expect(log).toEqual(['ran t1']);
    expect(started).toEqual(['r1', 'r2']);
    expect(box.dropAgent('a')).toEqual([]); // t2 is no run
    expect(log).toEqual(['ran t1', 'abandoned t2']);
  });
});
