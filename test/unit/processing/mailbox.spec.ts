import { Mailbox, MailboxJob } from '../../../src/processing/mailbox';

/** A handler whose jobs finish when the test says so; `slots`: each tenant's (quotas.running_runs). */
function harness(slots: Record<string, number> = {}) {
  const started: string[] = [];
  const finish = new Map<string, () => void>();
  const box = new Mailbox(
    (job: MailboxJob) =>
      new Promise<void>((resolve) => {
        started.push(job.runId);
        finish.set(job.runId, resolve);
      }),
    (tenantId) => slots[tenantId] ?? Infinity,
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
    box.enqueue('a', { tenantId: 't', runId: 'r1', priority: false, createdAt: 1 });
    box.enqueue('a', { tenantId: 't', runId: 'r2', priority: false, createdAt: 2 });
    box.enqueue('a', { tenantId: 't', runId: 'r3', priority: false, createdAt: 3 });
    expect(started).toEqual(['r1']);
    await done('r1');
    expect(started).toEqual(['r1', 'r2']);
    await done('r2');
    await done('r3');
    expect(started).toEqual(['r1', 'r2', 'r3']);
  });

  it('priority jobs (continuations) go ahead of waiting ones, after earlier priority jobs', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { tenantId: 't', runId: 'busy', priority: false, createdAt: 4 });
    box.enqueue('a', { tenantId: 't', runId: 'user1', priority: false, createdAt: 5 });
    box.enqueue('a', { tenantId: 't', runId: 'resume1', priority: true, createdAt: 6 });
    box.enqueue('a', { tenantId: 't', runId: 'resume2', priority: true, createdAt: 7 });
    for (const id of ['busy', 'resume1', 'resume2', 'user1']) await done(id);
    expect(started).toEqual(['busy', 'resume1', 'resume2', 'user1']);
  });

  it('runs stored on other instances join the waiting ones in the order they were stored', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { tenantId: 't', runId: 'busy', priority: false, createdAt: 10 });
    box.enqueue('a', { tenantId: 't', runId: 'late', priority: false, createdAt: 30 });
    box.enqueue('a', { tenantId: 't', runId: 'remote', priority: false, createdAt: 20 });
    box.enqueue('a', { tenantId: 't', runId: 'resume', priority: true, createdAt: 40 });
    for (const id of ['busy', 'resume', 'remote', 'late']) await done(id);
    expect(started).toEqual(['busy', 'resume', 'remote', 'late']);
    expect(box.dropAgent('a')).toEqual([]);
  });

  it('different agents run at the same time', () => {
    const { box, started } = harness();
    box.enqueue('a', { tenantId: 't', runId: 'a1', priority: false, createdAt: 8 });
    box.enqueue('b', { tenantId: 't', runId: 'b1', priority: false, createdAt: 9 });
    expect(started).toEqual(['a1', 'b1']);
  });

  it('remove drops a waiting job; close stops intake and whenIdle waits for running jobs', async () => {
    const { box, started, done } = harness();
    box.enqueue('a', { tenantId: 't', runId: 'r1', priority: false, createdAt: 10 });
    box.enqueue('a', { tenantId: 't', runId: 'r2', priority: false, createdAt: 11 });
    box.enqueue('a', { tenantId: 't', runId: 'r3', priority: false, createdAt: 12 });
    expect(box.remove('a', 'r2')).toBe(true);
    expect(box.remove('a', 'r1')).toBe(false); // running
    box.close();
    expect(box.enqueue('a', { tenantId: 't', runId: 'r4', priority: false, createdAt: 13 })).toBe(
      false,
    );
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
    box.enqueue('a', { tenantId: 't', runId: 'r1', priority: false, createdAt: 1 });
    box.enqueue('a', {
      tenantId: 't',
      runId: 't1',
      priority: false,
      createdAt: 2,
      turn: turn('t1'),
    });
    box.enqueue('a', { tenantId: 't', runId: 'r2', priority: false, createdAt: 3 });
    box.enqueue('a', {
      tenantId: 't',
      runId: 't2',
      priority: false,
      createdAt: 4,
      turn: turn('t2'),
    });
    expect(log).toEqual([]);
    await done('r1');
    expect(log).toEqual(['ran t1']);
    expect(started).toEqual(['r1', 'r2']);
    expect(box.dropAgent('a')).toEqual([]); // t2 is no run
    expect(log).toEqual(['ran t1', 'abandoned t2']);
  });

  describe('fair share between tenants (quotas.running_runs)', () => {
    const job = (tenantId: string, runId: string, createdAt: number, priority = false) => ({
      tenantId,
      runId,
      createdAt,
      priority,
    });

    it("a tenant's runs past its slots wait, in the order they were stored; another tenant's start at once", async () => {
      const { box, started, done } = harness({ flood: 2 });
      for (let i = 1; i <= 5; i++) box.enqueue(`f${i}`, job('flood', `f${i}`, i));
      expect(started).toEqual(['f1', 'f2']);
      expect(box.waiting('f3')).toBe(1); // stored, waiting: not refused, not dropped
      box.enqueue('b', job('other', 'b1', 6));
      expect(started).toEqual(['f1', 'f2', 'b1']);
      await done('b1');
      await done('f2');
      expect(started).toEqual(['f1', 'f2', 'b1', 'f3']);
      await done('f1');
      await done('f3');
      await done('f4');
      await done('f5');
      expect(started).toEqual(['f1', 'f2', 'b1', 'f3', 'f4', 'f5']);
      expect(box.busyAgents()).toEqual([]);
    });

    it("a freed slot goes to the tenant's oldest waiting run, the same agent's next one included", async () => {
      const { box, started, done } = harness({ t: 1 });
      box.enqueue('a', job('t', 'a1', 1));
      box.enqueue('b', job('t', 'b1', 2));
      box.enqueue('a', job('t', 'a2', 3));
      box.enqueue('c', job('t', 'c1', 4, true)); // a continuation: first
      await done('a1');
      await done('c1');
      await done('b1');
      await done('a2');
      expect(started).toEqual(['a1', 'c1', 'b1', 'a2']);
    });

    it('a waiting agent whose runs are removed or dropped gives its turn on; close leaves them stored', async () => {
      const { box, started, done } = harness({ t: 1 });
      box.enqueue('a', job('t', 'a1', 1));
      box.enqueue('b', job('t', 'b1', 2));
      box.enqueue('c', job('t', 'c1', 3));
      box.enqueue('d', job('t', 'd1', 4));
      expect(box.remove('b', 'b1')).toBe(true); // cancelled while waiting
      expect(box.dropAgent('c')).toEqual(['c1']); // another instance took the agent
      await done('a1');
      expect(started).toEqual(['a1', 'd1']);
      box.enqueue('e', job('t', 'e1', 5));
      box.close();
      await done('d1');
      expect(started).toEqual(['a1', 'd1']);
    });
  });
});
