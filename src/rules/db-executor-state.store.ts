import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { DataSource, In, LessThanOrEqual } from 'typeorm';
import type {
  BatchState,
  DedupeEntry,
  ExecutorStateStore,
  MaybePromise,
  StateWriter,
} from '../core/executor/contracts';
import { cloneBatch } from '../core/executor/in-memory-state-store';
import { approxBytes } from '../common/approx-bytes';
import { DEFAULT_TENANT } from '../config/app-config';
import type { AgentLeases } from '../cluster/agent-leases';
import type { GroupCommit, InsertSet } from '../database/group-commit';
import { RowReader } from '../database/raw-reads';
import { deleteWhere, updateWhere } from '../database/raw-writes';
import {
  BatchStateEntity,
  DedupeEntryEntity,
  LastExecutionEntity,
  ToolCallClaimEntity,
} from './executor-state.entities';

/** LRU values cannot be null: a remembered "not in the database". */
const ABSENT = Object.freeze({ absent: true as const });
type Absent = typeof ABSENT;

const batchState = new RowReader(BatchStateEntity, 'batch_id = ?');

const k = (a: string, b: string) => a + '\u0000' + b;
const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * ExecutorStateStore on the database: every write goes through to the database before the call
 * returns (so a restart loses nothing), through the app's group commit so that the claims and batch
 * states of concurrent conversations share transactions with their messages. Reads are served from
 * bounded LRU caches, which answer synchronously on a hit. Only the holder of an agent's lease writes
 * these tables' rows for the agent, so a cached "absent" stays true until this store writes the row;
 * an instance that takes an agent over drops what it cached of it first (forgetAgent).
 */
export class DbExecutorStateStore implements ExecutorStateStore {
  private readonly dedupe: LRUCache<string, DedupeEntry | Absent>;
  private readonly last: LRUCache<string, number | Absent>;
  private readonly batches: LRUCache<string, BatchState | Absent>;
  private readonly claims: LRUCache<string, true>;

  constructor(
    private readonly ds: DataSource,
    private readonly tx: Pick<GroupCommit, 'run' | 'insert' | 'insertFenced'>,
    maxEntries: number,
    /** Each cache's keys and values together, estimated: a dedupe entry holds a tool's result and arguments. */
    maxBytes: number,
    /**
     * Several instances: checks, in the claim's transaction, that this instance still holds the agent in
     * the claiming run's tenure, so a call never starts on an instance that lost the agent to another; and
     * so in the transaction of each of a run's writes (dedupe, cooldown, batch state), so an instance that
     * stalled past its lease never overwrites what the new holder's recovery wrote (`upsert`).
     */
    private readonly ownership?: Pick<AgentLeases, 'guard' | 'tenure'>,
  ) {
    const bounded = <V extends object | number | boolean>() =>
      new LRUCache<string, V>({
        max: maxEntries,
        maxSize: maxBytes,
        sizeCalculation: (value, key) => key.length + approxBytes(value),
      });
    this.dedupe = bounded();
    this.last = bounded();
    this.batches = bounded();
    this.claims = bounded();
  }

  getDedupe(agentId: string, key: string): MaybePromise<DedupeEntry | null> {
    const ck = k(agentId, key);
    const hit = this.dedupe.get(ck);
    if (hit !== undefined) return hit === ABSENT ? null : (hit as DedupeEntry);
    return this.ds
      .getRepository(DedupeEntryEntity)
      .findOneBy({ agent_id: agentId, key_hash: hashKey(key) })
      .then((row) => {
        const entry: DedupeEntry | null = row
          ? {
              result: row.result,
              at: row.at,
              expiresAt: row.expires_at,
              ...(row.outcome_unknown ? { unknown: true as const } : {}),
            }
          : null;
        this.dedupe.set(ck, entry ?? ABSENT);
        return entry;
      });
  }

  async putDedupe(
    agentId: string,
    key: string,
    entry: DedupeEntry,
    tenantId = DEFAULT_TENANT,
    tenure?: string | null,
  ): Promise<void> {
    const row = {
      agent_id: agentId,
      key_hash: hashKey(key),
      tenant_id: tenantId,
      result: entry.result,
      at: entry.at,
      expires_at: entry.expiresAt,
      outcome_unknown: entry.unknown === true,
    };
    await this.upsert(
      { entity: DedupeEntryEntity, rows: [row], conflictPaths: ['agent_id', 'key_hash'] },
      agentId,
      tenure,
    );
    this.dedupe.set(k(agentId, key), { ...entry });
  }

  getLastExecution(agentId: string, toolName: string): MaybePromise<number | null> {
    const ck = k(agentId, toolName);
    const hit = this.last.get(ck);
    if (hit !== undefined) return hit === ABSENT ? null : (hit as number);
    return this.ds
      .getRepository(LastExecutionEntity)
      .findOneBy({ agent_id: agentId, tool_name: toolName })
      .then((row) => {
        this.last.set(ck, row ? row.at : ABSENT);
        return row ? row.at : null;
      });
  }

  async setLastExecution(
    agentId: string,
    toolName: string,
    at: number,
    tenantId = DEFAULT_TENANT,
    tenure?: string | null,
  ): Promise<void> {
    const row = { agent_id: agentId, tool_name: toolName, tenant_id: tenantId, at };
    await this.upsert(
      { entity: LastExecutionEntity, rows: [row], conflictPaths: ['agent_id', 'tool_name'] },
      agentId,
      tenure,
    );
    this.last.set(k(agentId, toolName), at);
  }

  loadBatch(batchId: string): MaybePromise<BatchState | null> {
    const hit = this.batches.get(batchId);
    if (hit !== undefined) return hit === ABSENT ? null : cloneBatch(hit as BatchState);
    return batchState.one(this.ds, [batchId]).then((row) => {
      this.batches.set(batchId, row ? cloneBatch(row.state) : ABSENT);
      return row ? cloneBatch(row.state) : null;
    });
  }

  async saveBatch(
    batchId: string,
    state: BatchState,
    tenantId = DEFAULT_TENANT,
    writer?: StateWriter,
  ): Promise<void> {
    const copy = cloneBatch(state);
    const row = {
      batch_id: batchId,
      tenant_id: tenantId,
      state: copy,
      created_at: copy.createdAt,
      updated_at: copy.updatedAt,
      parked: false,
    };
    await this.upsert(
      { entity: BatchStateEntity, rows: [row], conflictPaths: ['batch_id'] },
      writer?.agentId,
      writer?.tenure,
    );
    this.batches.set(batchId, copy);
  }

  /**
   * An upsert of the agent's state. With shared leases, checked in its transaction against the agent's
   * lease in `tenure` (undefined: the current one): LEASE_LOST, nothing written, once that tenure is over.
   * One process (no `ownership`) keeps the plain insert, shared with other jobs' rows.
   */
  private upsert(
    set: InsertSet,
    agentId: string | undefined,
    tenure: string | null | undefined,
  ): Promise<void> {
    const fence = this.ownership;
    if (!fence || agentId === undefined) return this.tx.insert(set);
    const held = tenure === undefined ? fence.tenure(agentId) : tenure;
    return this.tx.insertFenced((em) => fence.guard(em, agentId, held), set);
  }

  async parkBatch(batchId: string): Promise<void> {
    await this.tx.run((em) =>
      updateWhere(em, BatchStateEntity, { batch_id: batchId }, { parked: true }),
    );
  }

  async deleteBatch(batchId: string): Promise<void> {
    await this.tx.run((em) => deleteWhere(em, BatchStateEntity, { batch_id: batchId }));
    this.batches.set(batchId, ABSENT);
  }

  async claimToolCall(
    agentId: string,
    toolCallId: string,
    stepId: string,
    at: number,
    tenantId = DEFAULT_TENANT,
    tenure = this.ownership?.tenure(agentId) ?? null,
  ): Promise<boolean> {
    const ck = k(agentId, k(toolCallId, stepId));
    if (this.claims.has(ck)) return false;
    const where = { agent_id: agentId, tool_call_id: toolCallId, step_id: stepId };
    try {
      // The primary key decides: a plain insert (shared with other claims' rows) fails when the id was
      // claimed before, by an earlier process or a concurrent caller.
      const row = { ...where, tenant_id: tenantId, at };
      const fence = this.ownership;
      if (fence)
        await this.tx.run(async (em) => {
          await fence.guard(em, agentId, tenure);
          await em.insert(ToolCallClaimEntity, row);
        });
      else await this.tx.insert({ entity: ToolCallClaimEntity, rows: [row] });
      this.claims.set(ck, true);
      return true;
    } catch (e) {
      if (await this.ds.getRepository(ToolCallClaimEntity).existsBy(where)) {
        this.claims.set(ck, true);
        return false;
      }
      throw e;
    }
  }

  async isClaimed(agentId: string, toolCallId: string, stepId: string): Promise<boolean> {
    if (this.claims.has(k(agentId, k(toolCallId, stepId)))) return true;
    // a claim stored before claims had a step ('') stands for the call in whatever step it was made
    return this.ds.getRepository(ToolCallClaimEntity).existsBy({
      agent_id: agentId,
      tool_call_id: toolCallId,
      step_id: stepId === '' ? '' : In([stepId, '']),
    });
  }

  /** Drops what is cached of the agent and of these batches of it (another instance may have written). */
  forgetAgent(agentId: string, batchIds: string[]): void {
    const prefix = agentId + '\u0000';
    const drop = (keys: Iterable<string>, del: (k: string) => void) => {
      for (const key of [...keys]) if (key.startsWith(prefix)) del(key);
    };
    drop(this.dedupe.keys(), (key) => this.dedupe.delete(key));
    drop(this.last.keys(), (key) => this.last.delete(key));
    drop(this.claims.keys(), (key) => this.claims.delete(key));
    for (const id of batchIds) this.batches.delete(id);
  }

  async pruneExpired(now: number, batchTtlMs: number): Promise<void> {
    await this.tx.run(async (em) => {
      await em.delete(DedupeEntryEntity, { expires_at: LessThanOrEqual(now) });
      await em.delete(BatchStateEntity, {
        updated_at: LessThanOrEqual(now - batchTtlMs),
        parked: false,
      });
      await em.delete(ToolCallClaimEntity, { at: LessThanOrEqual(now - batchTtlMs) });
    });
    // Cached copies of pruned rows must not outlive them; the caches refill on demand.
    this.dedupe.clear();
    this.batches.clear();
    this.claims.clear();
  }
}
