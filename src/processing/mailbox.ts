import { Logger } from '@nestjs/common';

/** A unit of work for one agent: a run to process. */
export interface MailboxJob {
  runId: string;
  /** The agent's tenant: its jobs share the tenant's slots. */
  tenantId: string;
  /** Continuations (consent resumptions) go ahead of waiting user messages. */
  priority: boolean;
  /** When the run was stored: runs stored on other instances join the queue in this order. */
  createdAt: number;
  /** Work that is not a run (a direct tool run): done in the agent's turn instead of the handler. */
  turn?: { run: () => Promise<void>; abandon: () => void };
}

interface AgentQueue {
  tenantId: string;
  jobs: MailboxJob[];
  /** `waiting`: the first job waits for one of its tenant's slots. */
  state: 'idle' | 'waiting' | 'running';
  /** Orders agents that wait for the same tenant's slot alike when their first jobs tie. */
  since: number;
}

/**
 * One batch at a time per agent, in arrival order (priority jobs first); many agents at once, at most
 * `slotsOf(tenant)` of one tenant's at once (`quotas.running_runs`). When a tenant's slots are taken its
 * agents' next jobs wait, and a freed slot goes to the one stored first (continuations first), whichever of
 * the tenant's agents it is for: a tenant's flood waits behind itself, never in front of another tenant.
 * The queue is in memory; durability comes from the run rows (status `created`), which boot re-enqueues.
 */
export class Mailbox {
  private readonly queues = new Map<string, AgentQueue>();
  /** Per tenant: jobs running, and agents whose first job waits for a slot. */
  private readonly running = new Map<string, number>();
  private readonly waitingAgents = new Map<string, Set<string>>();
  private readonly idle = new Set<() => void>();
  private closed = false;
  private active = 0;
  private order = 0;
  private readonly logger = new Logger('Mailbox');

  constructor(
    private readonly handler: (job: MailboxJob) => Promise<void>,
    private readonly slotsOf: (tenantId: string) => number = () => Infinity,
  ) {}

  /** Queues a job; false once the mailbox is closed (shutting down: the run stays `created`). */
  enqueue(agentId: string, job: MailboxJob): boolean {
    if (this.closed) return false;
    let q = this.queues.get(agentId);
    if (!q)
      this.queues.set(agentId, (q = { tenantId: job.tenantId, jobs: [], state: 'idle', since: 0 }));
    const at = q.jobs.findIndex((j) =>
      job.priority ? !j.priority : !j.priority && j.createdAt > job.createdAt,
    );
    q.jobs.splice(at < 0 ? q.jobs.length : at, 0, job);
    if (q.state === 'idle') this.ask(agentId, q);
    return true;
  }

  /** Removes a queued job; false when it is not waiting (running or unknown). */
  remove(agentId: string, runId: string): boolean {
    const q = this.queues.get(agentId);
    const i = q?.jobs.findIndex((j) => j.runId === runId) ?? -1;
    if (!q || i < 0) return false;
    q.jobs.splice(i, 1);
    if (q.jobs.length === 0 && q.state === 'waiting') this.forgetWaiting(agentId, q);
    return true;
  }

  /** Removes the agent's queued jobs (it went to another instance); answers their run ids. */
  dropAgent(agentId: string): string[] {
    const q = this.queues.get(agentId);
    if (!q) return [];
    const dropped = abandonTurns(q.jobs.splice(0)).map((j) => j.runId);
    if (q.state === 'waiting') this.forgetWaiting(agentId, q);
    return dropped;
  }

  /** The agent's jobs waiting for their turn (not the one running). */
  waiting(agentId: string): number {
    return this.queues.get(agentId)?.jobs.length ?? 0;
  }

  /** The tenant's jobs running here (what its slots, `slotsOf`, bound). */
  runningOf(tenantId: string): number {
    return this.running.get(tenantId) ?? 0;
  }

  /** Agents with a job queued or running. */
  busyAgents(): string[] {
    return [...this.queues.keys()];
  }

  /** Stops taking jobs: what is queued stays queued (its rows stay `created` for the next boot). */
  close(): void {
    this.closed = true;
    for (const [agentId, q] of this.queues) {
      abandonTurns(q.jobs.splice(0));
      if (q.state === 'waiting') this.forgetWaiting(agentId, q);
    }
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Resolves when no job is running. */
  whenIdle(): Promise<void> {
    if (this.active === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.add(resolve));
  }

  /** The agent's next job asks for a slot of its tenant: it starts now if one is free. */
  private ask(agentId: string, q: AgentQueue): void {
    if (q.jobs.length === 0 || this.closed) {
      q.state = 'idle';
      this.queues.delete(agentId);
      return;
    }
    q.state = 'waiting';
    q.since = this.order++;
    let agents = this.waitingAgents.get(q.tenantId);
    if (!agents) this.waitingAgents.set(q.tenantId, (agents = new Set()));
    agents.add(agentId);
    this.fill(q.tenantId);
  }

  /** Starts the tenant's waiting jobs while it has free slots, the first stored first. */
  private fill(tenantId: string): void {
    const agents = this.waitingAgents.get(tenantId);
    while (agents?.size && (this.running.get(tenantId) ?? 0) < this.slotsOf(tenantId)) {
      let next: string | null = null;
      for (const id of agents) if (next === null || this.before(id, next)) next = id;
      agents.delete(next!);
      this.start(next!, this.queues.get(next!)!);
    }
    if (agents?.size === 0) this.waitingAgents.delete(tenantId);
  }

  /** Whether agent a's first job goes before agent b's: continuations, then the older, then the first asked. */
  private before(a: string, b: string): boolean {
    const qa = this.queues.get(a)!;
    const qb = this.queues.get(b)!;
    const [ja, jb] = [qa.jobs[0], qb.jobs[0]];
    if (ja.priority !== jb.priority) return ja.priority;
    if (ja.createdAt !== jb.createdAt) return ja.createdAt < jb.createdAt;
    return qa.since < qb.since;
  }

  private start(agentId: string, q: AgentQueue): void {
    const job = q.jobs.shift()!;
    const tenant = q.tenantId;
    q.state = 'running';
    this.active++;
    this.running.set(tenant, (this.running.get(tenant) ?? 0) + 1);
    (job.turn ? job.turn.run() : this.handler(job))
      .catch((e: unknown) => this.logger.error(`run ${job.runId}: ${String(e)}`))
      .finally(() => {
        this.active--;
        const n = this.running.get(tenant)! - 1;
        if (n > 0) this.running.set(tenant, n);
        else this.running.delete(tenant);
        if (this.active === 0) {
          for (const r of this.idle) r();
          this.idle.clear();
        }
        // the agent's next job asks again, behind the tenant's older waiting ones
        this.ask(agentId, q);
        this.fill(tenant);
      });
  }

  /** The agent no longer waits for a slot (its jobs were removed). */
  private forgetWaiting(agentId: string, q: AgentQueue): void {
    const agents = this.waitingAgents.get(q.tenantId);
    agents?.delete(agentId);
    if (agents?.size === 0) this.waitingAgents.delete(q.tenantId);
    q.state = 'idle';
    this.queues.delete(agentId);
  }
}

/** Tells the turns among dropped jobs that they will not run; answers the runs. */
function abandonTurns(jobs: MailboxJob[]): MailboxJob[] {
  for (const j of jobs) j.turn?.abandon();
  return jobs.filter((j) => !j.turn);
}
