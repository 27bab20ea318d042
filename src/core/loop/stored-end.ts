import { type BatchBudgets, type BudgetSpent, exhaustedBudget } from './budgets';
import { decideAfterTurn, type TurnView } from './loop-decision';
import type { StopReason } from './stop-reason';

/**
 * A run whose end is not stored (its end write failed, or its process died after its last write), as
 * recovery reads it back: the last turn it decided on, with each call's outcome as its stored return says,
 * and what it stored after that turn.
 */
export interface StoredRun {
  /** The loop's view of the run's last turn (a model turn, or a parked turn its continuation resolved); null: none (no model call yet). */
  turn: TurnView | null;
  /** What the run stored after that turn: nothing, a rule reminder, or a heartbeat message. */
  after: 'nothing' | 'reminder' | 'heartbeat';
  budgets: BatchBudgets;
  /** What the batch has spent (its stored steps, earlier runs included). */
  spent: Pick<BudgetSpent, 'steps' | 'tokens'>;
}

export interface StoredEnd {
  stopReason: StopReason;
  detail: string | null;
}

/**
 * How the run ended, when what it stored settles it: the loop's decision is pure and its inputs are stored,
 * so every process reads the same end. A decision to end the batch is that end; one to go on (the same
 * pass, after a reminder, or a heartbeat's new pass) means a model call next, which a used-up budget
 * (steps, tokens) stops first. Null when nothing stored says how the run ended: it stopped before its
 * decision was stored in full (a reminder or heartbeat message not written), or where the store keeps no
 * trace (a model call that failed, a cancel, the wall time): such a run ends interrupted.
 */
export function storedEnd(run: StoredRun): StoredEnd | null {
  const d = run.turn ? decideAfterTurn(run.turn) : null;
  switch (d?.kind) {
    case 'park': // a turn that parked is read from its approval request, stored with the calls it waits on
      return null;
    case 'end':
      return run.after === 'nothing' ? { stopReason: d.stopReason, detail: null } : null;
    case 'remind':
      if (run.after !== 'reminder') return null;
      break;
    case 'heartbeat':
      if (run.after !== 'heartbeat') return null;
      break;
    case 'continue': // in the same pass
    case undefined: // no turn yet
      if (run.after !== 'nothing') return null;
  }
  const over = exhaustedBudget(run.budgets, { ...run.spent, elapsedMs: 0 });
  return over ? { stopReason: over.reason, detail: over.detail } : null;
}
