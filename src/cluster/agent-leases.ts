import type { DataSource, EntityManager } from 'typeorm';
import { DomainError } from '../common/domain-error';

/** How an acquisition went: `fresh` when this instance did not hold the agent just before. */
export type Acquired = 'fresh' | 'kept';

export interface OrphanedAgent {
  tenantId: string;
  agentId: string;
}

/**
 * Agent ownership. Only the holder of an agent's lease processes its runs, so its in-memory state for
 * that agent (message sequence, history, rule-state caches) stays valid while it holds it; a `fresh`
 * acquisition means another instance may have written since, and the caller drops that state and
 * recovers the agent's unfinished runs. Used by the mailbox (processing) and by recovery.
 */
export interface AgentLeases {
  /** Takes the agent, or keeps it; null when another live instance holds it. */
  acquire(tenantId: string, agentId: string): Promise<Acquired | null>;
  /** Whether this instance holds the agent now (from memory, with a safety margin). */
  holds(agentId: string): boolean;
  /** The agents this instance holds (or believes it does, until a renewal says otherwise). */
  held(): string[];
  /** Extends the leases of these (busy) agents; answers the ones that were lost. */
  renew(agentIds: string[]): Promise<string[]>;
  /** Gives up these (idle) agents, except those with stored runs waiting; answers the released ones. */
  release(agentIds: string[]): Promise<string[]>;
  /** Gives up every agent (shutdown): the other instances take them, queued runs included, at once. */
  releaseAll(): Promise<void>;
  /** Agents with queued or running runs that no live instance holds, and held ones with runs left waiting. */
  orphaned(olderThan: number): Promise<OrphanedAgent[]>;
  /**
   * This instance's current tenure of the agent (null: it does not hold it). A tenure starts with every
   * `fresh` acquisition: a run keeps the one it started under, so its writes never pass once that
   * tenure is over, even when this instance has taken the agent back since.
   */
  tenure(agentId: string): string | null;
  /**
   * Ends this instance's tenure of the agent here, its lease row left as it is: the next acquisition is
   * `fresh`, so what was cached of the agent is dropped and its unfinished runs recovered first.
   */
  forget(agentId: string): void;
  /** Inside a transaction: throws LEASE_LOST unless this instance still holds the agent in that tenure. */
  guard(em: EntityManager, agentId: string, tenure: string | null): Promise<void>;
  /** Whether the leases are shared with other instances (PostgreSQL). */
  readonly shared: boolean;
}

export const AGENT_LEASES = Symbol('AGENT_LEASES');

export function leaseLost(agentId: string): DomainError {
  return new DomainError(
    'unavailable',
    'LEASE_LOST',
    `this instance no longer holds agent ${agentId}; another instance took it over`,
    { agent_id: agentId },
  );
}

/** One process (SQLite): it holds every agent it touches, for as long as it runs. */
export class LocalAgentLeases implements AgentLeases {
  readonly shared = false;
  /** The tenure of each agent held. */
  private readonly agents = new Map<string, string>();
  private tenures = 0;

  constructor(private readonly ds: DataSource) {}

  acquire(_tenantId: string, agentId: string): Promise<Acquired> {
    if (this.agents.has(agentId)) return Promise.resolve('kept');
    this.agents.set(agentId, String(++this.tenures));
    return Promise.resolve('fresh');
  }

  tenure(agentId: string): string | null {
    return this.agents.get(agentId) ?? null;
  }

  forget(agentId: string): void {
    this.agents.delete(agentId);
  }

  holds(agentId: string): boolean {
    return this.agents.has(agentId);
  }

  held(): string[] {
    return [...this.agents.keys()];
  }

  renew(): Promise<string[]> {
    return Promise.resolve([]);
  }

  /** Keeps them: no other process can have written, so the caches stay valid. */
  release(): Promise<string[]> {
    return Promise.resolve([]);
  }

  releaseAll(): Promise<void> {
    this.agents.clear();
    return Promise.resolve();
  }

  async orphaned(): Promise<OrphanedAgent[]> {
    const rows: { tenant_id: string; agent_id: string }[] = await this.ds.query(
      `SELECT DISTINCT tenant_id, agent_id FROM runs WHERE status IN ('created', 'running')`,
    );
    return rows
      .filter((r) => !this.agents.has(r.agent_id))
      .map((r) => ({ tenantId: r.tenant_id, agentId: r.agent_id }));
  }

  guard(): Promise<void> {
    return Promise.resolve();
  }
}
