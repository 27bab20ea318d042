import type { BatchState, DedupeEntry, ExecutorStateStore } from './contracts';

/**
 * ExecutorStateStore in plain Maps, answering synchronously: for tests, the bench, and as the
 * model of what the database-backed store must do. A "restart" is a new executor on the same store.
 */
export class InMemoryStateStore implements ExecutorStateStore {
  readonly dedupe = new Map<string, DedupeEntry>();
  readonly lastExecutions = new Map<string, number>();
  readonly batches = new Map<string, BatchState>();
  readonly claims = new Map<string, number>();
  readonly parked = new Set<string>();

  getDedupe(agentId: string, key: string): DedupeEntry | null {
    return this.dedupe.get(agentId + '\u0000' + key) ?? null;
  }
  putDedupe(agentId: string, key: string, entry: DedupeEntry): void {
    this.dedupe.set(agentId + '\u0000' + key, entry);
  }
  getLastExecution(agentId: string, toolName: string): number | null {
    return this.lastExecutions.get(agentId + '\u0000' + toolName) ?? null;
  }
  setLastExecution(agentId: string, toolName: string, at: number): void {
    this.lastExecutions.set(agentId + '\u0000' + toolName, at);
  }
  loadBatch(batchId: string): BatchState | null {
    const b = this.batches.get(batchId);
    return b ? cloneBatch(b) : null;
  }
  /** Kept by reference (the executor saves after every change); loads hand out copies. */
  saveBatch(batchId: string, state: BatchState): void {
    this.batches.set(batchId, state);
    this.parked.delete(batchId);
  }
  deleteBatch(batchId: string): void {
    this.batches.delete(batchId);
    this.parked.delete(batchId);
  }
  parkBatch(batchId: string): void {
    if (this.batches.has(batchId)) this.parked.add(batchId);
  }
  claimToolCall(agentId: string, toolCallId: string, stepId: string, at: number): boolean {
    const k = claimKey(agentId, toolCallId, stepId);
    if (this.claims.has(k)) return false;
    this.claims.set(k, at);
    return true;
  }
  isClaimed(agentId: string, toolCallId: string, stepId: string): boolean {
    return (
      this.claims.has(claimKey(agentId, toolCallId, stepId)) ||
      this.claims.has(claimKey(agentId, toolCallId, ''))
    );
  }
  pruneExpired(now: number, batchTtlMs: number): void {
    for (const [k, e] of this.dedupe) if (e.expiresAt <= now) this.dedupe.delete(k);
    for (const [k, b] of this.batches)
      if (b.updatedAt + batchTtlMs <= now && !this.parked.has(k)) this.batches.delete(k);
    // A claim only matters while its batch can still be resumed.
    for (const [k, at] of this.claims) if (at + batchTtlMs <= now) this.claims.delete(k);
  }
}

const claimKey = (agentId: string, toolCallId: string, stepId: string) =>
  agentId + '\u0000' + toolCallId + '\u0000' + stepId;

/** Copies so a caller's later mutation never leaks into the stored state (as with a database). */
export function cloneBatch(b: BatchState): BatchState {
  return {
    callCounts: { ...b.callCounts },
    succeeded: { ...(b.succeeded ?? {}) },
    mustFollow: [...(b.mustFollow ?? [])],
    createdAt: b.createdAt,
    updatedAt: b.updatedAt,
  };
}
