import type { DataSource, EntityManager } from 'typeorm';
import { Acquired, AgentLeases, leaseLost, OrphanedAgent } from './agent-leases';
import { sqlTable } from '../database/sql-names';

/** The database's clock in milliseconds: every instance compares expiries against the same clock. */
const NOW = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

export interface PgLeaseOptions {
  schema: string | null;
  /** `<instance id>/<boot id>`: a restart is a new owner. */
  owner: string;
  instanceId: string;
  durationMs: number;
  renewIntervalMs: number;
}

/**
 * Leases as rows of `agent_leases` (agent, owner, token, expiry by the database clock). The token
 * changes whenever the owner does, so an instance that gets an agent back with the token it remembers
 * knows nobody else held it meanwhile (its caches are still valid). An expired lease is taken over; so
 * is one left by an earlier boot of the same instance id (instance ids are unique among live instances).
 */
export class PgAgentLeases implements AgentLeases {
  readonly shared = true;
  private readonly leases: string;
  private readonly runs: string;
  /**
   * Token of each agent this instance holds or last held, its tenure here (the token stays the same when
   * this instance takes back an agent nobody took meanwhile; the tenure does not), and until when (local
   * clock) it holds it.
   */
  private readonly mine = new Map<string, { token: string; tenure: string; until: number }>();
  private tenures = 0;
  /** Releases under way, by agent: an acquisition of the agent waits for it (else the release could win). */
  private readonly releasing = new Map<string, Promise<unknown>>();

  constructor(
    private readonly ds: DataSource,
    private readonly o: PgLeaseOptions,
  ) {
    this.leases = sqlTable(o.schema, 'agent_leases');
    this.runs = sqlTable(o.schema, 'runs');
  }

  async acquire(tenantId: string, agentId: string): Promise<Acquired | null> {
    await this.releasing.get(agentId)?.catch(() => undefined);
    const rows: { token: string }[] = await this.ds.query(
      `INSERT INTO ${this.leases} AS l (agent_id, tenant_id, owner, token, expires_at)
       VALUES ($1, $2, $3, 1, ${NOW} + $4)
       ON CONFLICT (agent_id) DO UPDATE SET
         owner = EXCLUDED.owner,
         expires_at = EXCLUDED.expires_at,
         token = CASE WHEN l.owner = EXCLUDED.owner THEN l.token ELSE l.token + 1 END
       WHERE l.owner = EXCLUDED.owner OR l.expires_at < ${NOW} OR split_part(l.owner, '/', 1) = $5
       RETURNING token`,
      [agentId, tenantId, this.o.owner, this.o.durationMs, this.o.instanceId],
    );
    if (rows.length === 0) return null;
    const token = String(rows[0].token);
    const before = this.mine.get(agentId);
    const kept = before?.token === token;
    // Taken from another holder (or another tenure): its writes still in flight hold the row (guard's
    // KEY SHARE, which the take's update does not wait for), and must commit before anything is read
    if (!kept)
      await this.ds.query(`SELECT 1 FROM ${this.leases} WHERE agent_id = $1 FOR UPDATE`, [agentId]);
    const tenure = kept ? before.tenure : `${token}.${++this.tenures}`;
    this.mine.set(agentId, { token, tenure, until: this.until() });
    return kept ? 'kept' : 'fresh';
  }

  tenure(agentId: string): string | null {
    return this.mine.get(agentId)?.tenure ?? null;
  }

  forget(agentId: string): void {
    this.mine.delete(agentId);
  }

  holds(agentId: string): boolean {
    const m = this.mine.get(agentId);
    return m !== undefined && m.until > Date.now();
  }

  held(): string[] {
    return [...this.mine].filter(([, m]) => m.until > 0).map(([id]) => id);
  }

  async renew(agentIds: string[]): Promise<string[]> {
    if (agentIds.length === 0) return [];
    const rows = updated<{ agent_id: string; token: string }>(
      await this.ds.query(
        `UPDATE ${this.leases} SET expires_at = ${NOW} + $2
         WHERE owner = $1 AND agent_id = ANY($3) RETURNING agent_id, token`,
        [this.o.owner, this.o.durationMs, agentIds],
      ),
    );
    const kept = new Set<string>();
    for (const r of rows) {
      const m = this.mine.get(r.agent_id);
      if (m && m.token === String(r.token)) {
        m.until = this.until();
        kept.add(r.agent_id);
      }
    }
    const lost = agentIds.filter((id) => !kept.has(id));
    for (const id of lost) this.mine.delete(id);
    return lost;
  }

  async release(agentIds: string[]): Promise<string[]> {
    if (agentIds.length === 0) return [];
    // nothing new starts on them here meanwhile: an arriving run goes through acquire (which waits)
    const before = new Map(agentIds.map((id) => [id, this.mine.get(id)?.until ?? 0]));
    for (const id of agentIds) {
      const m = this.mine.get(id);
      if (m) m.until = 0;
    }
    // an agent with a stored run waiting stays held (its wake-up may be on its way to this instance),
    // and so does one with a run going
    const releasing: Promise<unknown> = this.ds.query(
      `UPDATE ${this.leases} AS l SET expires_at = 0
       WHERE l.owner = $1 AND l.agent_id = ANY($2)
         AND NOT EXISTS (SELECT 1 FROM ${this.runs} r
                         WHERE r.agent_id = l.agent_id AND r.status IN ('created', 'running'))
       RETURNING l.agent_id`,
      [this.o.owner, agentIds],
    );
    for (const id of agentIds) this.releasing.set(id, releasing);
    let rows: { agent_id: string }[];
    try {
      rows = updated<{ agent_id: string }>(await releasing);
    } finally {
      for (const id of agentIds)
        if (this.releasing.get(id) === releasing) this.releasing.delete(id);
    }
    // the token is remembered: getting the agent back untouched keeps the caches
    const released = new Set(rows.map((r) => r.agent_id));
    for (const id of agentIds) {
      const m = this.mine.get(id);
      if (m && m.until === 0 && !released.has(id)) m.until = before.get(id) ?? 0;
    }
    return [...released];
  }

  async releaseAll(): Promise<void> {
    await this.ds.query(`UPDATE ${this.leases} SET expires_at = 0 WHERE owner = $1`, [
      this.o.owner,
    ]);
    this.mine.clear();
  }

  async orphaned(olderThan: number): Promise<OrphanedAgent[]> {
    const rows: { tenant_id: string; agent_id: string }[] = await this.ds.query(
      `SELECT DISTINCT r.tenant_id, r.agent_id FROM ${this.runs} r
       LEFT JOIN ${this.leases} l ON l.agent_id = r.agent_id
       WHERE r.status IN ('created', 'running')
         AND (l.agent_id IS NULL OR l.expires_at < ${NOW}
              OR (split_part(l.owner, '/', 1) = $1 AND l.owner <> $2)
              OR (l.owner = $2 AND r.status = 'created' AND r.created_at < $3))
       LIMIT 1000`,
      [this.o.instanceId, this.o.owner, olderThan],
    );
    return rows.map((r) => ({ tenantId: r.tenant_id, agentId: r.agent_id }));
  }

  /**
   * KEY SHARE, not SHARE: renewals and releases (which only move the expiry) then never wait for a
   * write, so the keeper's renewal of several agents cannot deadlock with a transaction fencing several;
   * a takeover's FOR UPDATE (acquire) still waits for the write to commit.
   */
  async guard(em: EntityManager, agentId: string, tenure: string | null): Promise<void> {
    const m = this.mine.get(agentId);
    const current = m !== undefined && m.tenure === tenure;
    const rows: unknown[] = current
      ? await em.query(
          `SELECT 1 FROM ${this.leases} WHERE agent_id = $1 AND owner = $2 AND token = $3
             AND expires_at > ${NOW} FOR KEY SHARE`,
          [agentId, this.o.owner, m.token],
        )
      : [];
    if (rows.length === 0) {
      // a write of an earlier tenure ends nothing: this instance may hold the agent again, rightly
      if (current) this.mine.delete(agentId);
      throw leaseLost(agentId);
    }
  }

  /** Held until a renewal is overdue by one interval: a margin before the database's expiry. */
  private until(): number {
    return Date.now() + this.o.durationMs - this.o.renewIntervalMs;
  }
}

/** TypeORM answers an UPDATE … RETURNING on PostgreSQL as [rows, count]. */
function updated<T>(result: unknown): T[] {
  return (Array.isArray(result) && Array.isArray(result[0]) ? result[0] : result) as T[];
}
