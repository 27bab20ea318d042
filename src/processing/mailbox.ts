import { Logger } from '@nestjs/common';

/** A unit of work for one agent: a run to process. */
export interface MailboxJob {
  runId: string;
  /** Continuations (consent resumptions) go ahead of waiting user messages. */
  priority: boolean;
  /** When the run was stored: runs stored on other instances join the queue in this order. */
  createdAt: number;
  /** Work that is not a run (a direct tool run): done in the agent's turn instead of the handler. */
  turn?: { run: () => Promise<void>; abandon: () => void };
}

interface AgentQueue {
  jobs: MailboxJob[];
  running: boolean;
}

/**
 * One batch at a time per agent, in arrival order (priority jobs first); many agents at once.
 * The queue is in memory; durability comes from the run rows (status `created`), which boot re-enqueues.
 */
export class Mailbox {
  private readonly queues = new Map<string, AgentQueue>();
  private readonly idle = new Set<() => void>();
  private closed = false;
  private active = 0;
  private readonly logger = new Logger('Mailbox');

  constructor(private readonly handler: (job: MailboxJob) => Promise<void>) {}

  /** Queues a job; false once the mailbox is closed (shutting down: the run stays `created`). */
  enqueue(agentId: string, job: MailboxJob): boolean {
    if (this.closed) return false;
    let q = this.queues.get(agentId);
    if (!q) this.queues.set(agentId, (q = { jobs: [], running: false }));
    const at = q.jobs.findIndex((j) =>
      job.priority ? !j.priority : !j.priority && j.createdAt > job.createdAt,
    );
    q.jobs.splice(at < 0 ? q.jobs.length : at, 0, job);
    if (!q.running) this.drain(agentId, q);
    return true;
  }

  /** Removes a queued job; false when it is not waiting (running or unknown). */
  remove(agentId: string, runId: string): boolean {
    const q = this.queues.get(agentId);
    const i = q?.jobs.findIndex((j) => j.runId === runId) ?? -1;
    if (!q || i < 0) return false;
    q.jobs.splice(i, 1);
    return true;
  }

  /** Removes the agent's queued jobs (it went to another instance); answers their run ids. */
  dropAgent(agentId: string): string[] {
    const q = this.queues.get(agentId);
    return q ? abandonTurns(q.jobs.splice(0)).map((j) => j.runId) : [];
  }

  /** The agent's jobs waiting for their turn (not the one running). */
  waiting(agentId: string): number {
    return this.queues.get(agentId)?.jobs.length ?? 0;
  }

  /** Agents with a job queued or running. */
  busyAgents(): string[] {
    return [...this.queues.keys()];
  }

  /** Stops taking jobs: what is queued stays queued (its rows stay `created` for the next boot). */
  close(): void {
    this.closed = true;
    for (const q of this.queues.values()) abandonTurns(q.jobs.splice(0));
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Resolves when no job is running. */
  whenIdle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  private drain(agentId: string, q: AgentQueue): void {
    const job = q.jobs.shift();
    if (!job || this.closed) {
      q.running = false;
      if (q.jobs.length === 0) this.queues.delete(agentId);
      return;
    }
    q.running = true;
    this.active++;
    (job.turn ? job.turn.run() : this.handler(job))
      .catch((e: unknown) => this.logger.error(`run ${job.runId}: ${String(e)}`))
      .finally(() => {
        this.active--;
        if (this.active === 0) {
          for (const r of this.idle) r();
          this.idle.clear();
        }
        this.drain(agentId, q);
      });
  }
}

/** Tells the turns among dropped jobs that they will not run; answers the runs. */
function abandonTurns(jobs: MailboxJob[]): MailboxJob[] {
  for (const j of jobs) j.turn?.abandon();
  return jobs.filter((j) => !j.turn);
}
