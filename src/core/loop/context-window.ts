import type { ChatMessage } from '../../models/model-provider';
import {
  ContextInput,
  HistoryMessage,
  renderSystemPrompt,
  selectUnits,
  toChatUnits,
  Unit,
  unitCost,
} from './context-builder';

/** A chat unit with its token cost, counted once. */
interface CostedUnit extends Unit {
  cost: number;
}

export type WindowInput = Omit<ContextInput, 'history' | 'countTokens'>;

/**
 * An agent's in-context window kept across steps, so that a step's cost does not depend on how long the
 * history is: messages are appended as they are stored, each unit's tokens are counted once, and units
 * that could never fit the context window again are evicted. Builds exactly what `buildContext` builds
 * from the whole history: a user or system message always closes the unit before it, so the units before
 * the last such message never change; only the messages after it (the current batch) are re-grouped.
 */
export class ContextWindow {
  /** Units that can no longer change, oldest first (from `start` on; earlier ones are evicted). */
  private closed: CostedUnit[] = [];
  private start = 0;
  /** Messages after the last user/system message: their grouping may still change. */
  private open: HistoryMessage[] = [];

  constructor(
    private readonly countTokens: (text: string) => number,
    /** The largest context window this one is kept for (evicts what could not fit it). */
    readonly keepTokens: number,
  ) {}

  append(messages: HistoryMessage[]): void {
    for (const m of messages) {
      if (m.message_type === 'user_message' || m.message_type === 'system_message') {
        for (const u of toChatUnits(this.open)) this.closed.push(this.costed(u));
        this.open = [];
        for (const u of toChatUnits([m])) this.closed.push(this.costed(u));
      } else {
        this.open.push(m);
      }
    }
  }

  build(input: WindowInput): ChatMessage[] {
    this.evict(input.currentMessageId);
    const system = renderSystemPrompt(input.system, input.blocks);
    const units: CostedUnit[] = this.closed.slice(this.start);
    for (const u of toChatUnits(this.open)) units.push(this.costed(u));
    const budget = input.contextWindow - input.reserveTokens - this.countTokens(system);
    const kept = selectUnits(units, (u) => u.cost, budget, input.currentMessageId);
    return [{ role: 'system', content: system }, ...kept.flatMap((u) => u.messages)];
  }

  private costed(u: Unit): CostedUnit {
    return { ...u, cost: unitCost(u, this.countTokens) };
  }

  /**
   * Drops the oldest closed units that no build can use any more: older than the current batch's
   * message (a batch's units are kept whole, batches only move forward) and older than units that
   * alone already fill `keepTokens` (every budget is at most the context window).
   */
  private evict(currentMessageId: string | null): void {
    let passedCurrent = true;
    if (currentMessageId !== null)
      for (let i = this.closed.length - 1; i >= this.start; i--)
        if (this.closed[i].ids.includes(currentMessageId)) {
          passedCurrent = false;
          break;
        }
    let newer = 0;
    let i = this.closed.length - 1;
    for (; i >= this.start; i--) {
      if (newer >= this.keepTokens && passedCurrent) break;
      if (!passedCurrent && this.closed[i].ids.includes(currentMessageId!)) passedCurrent = true;
      newer += this.closed[i].cost;
    }
    if (i < this.start) return;
    this.start = i + 1;
    // compact now and then, not on every step
    if (this.start > 256 && this.start * 2 > this.closed.length) {
      this.closed = this.closed.slice(this.start);
      this.start = 0;
    }
  }
}
