import type { ChatMessage } from '../../models/model-provider';
import {
  ContextInput,
  HistoryMessage,
  MemoryBlockView,
  renderSystemPrompt,
  selectUnitsAt,
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
  /** Units dropped from the front of `closed` (its compactions): `unitOf` counts them too. */
  private dropped = 0;
  /** Each user or system message's unit, as `dropped` + its index in `closed` (finds the current one). */
  private readonly unitOf = new Map<string, number>();
  /** Messages after the last user/system message: their grouping may still change. */
  private open: HistoryMessage[] = [];
  /** `open` as costed units; null once `open` changed. */
  private openUnits: CostedUnit[] | null = [];
  /** The open units' costs by their message ids (a unit's messages decide its content). */
  private openCosts = new Map<string, number>();
  /** What the last eviction was for: unchanged, another one would evict nothing. */
  private evicted: { closed: number; current: string | null } | null = null;
  private system: {
    system: string;
    blocks: MemoryBlockView[];
    text: string;
    tokens: number;
  } | null = null;

  constructor(
    private readonly countTokens: (text: string) => number,
    /** The largest context window this one is kept for (evicts what could not fit it). */
    readonly keepTokens: number,
  ) {}

  append(messages: HistoryMessage[]): void {
    for (const m of messages) {
      if (m.message_type === 'user_message' || m.message_type === 'system_message') {
        for (const u of this.costedOpen()) this.closed.push(u);
        this.open = [];
        this.openCosts = new Map();
        for (const u of toChatUnits([m])) this.closed.push(this.costed(u));
        this.unitOf.set(m.id, this.dropped + this.closed.length - 1);
      } else {
        this.open.push(m);
      }
      this.openUnits = null;
    }
  }

  build(input: WindowInput): ChatMessage[] {
    this.evict(input.currentMessageId);
    const current = this.closedIndexOf(input.currentMessageId);
    const system = this.systemPrompt(input.system, input.blocks);
    const open = this.costedOpen();
    const closedCount = this.closed.length - this.start;
    let currentIndex = current >= 0 && current >= this.start ? current - this.start : -1;
    // the current message is a user message, so it is closed; an id of an open unit is later still
    if (input.currentMessageId !== null)
      for (let i = open.length - 1; i >= 0; i--)
        if (open[i].ids.includes(input.currentMessageId)) {
          currentIndex = closedCount + i;
          break;
        }
    const kept = selectUnitsAt(
      closedCount + open.length,
      (i) => (i < closedCount ? this.closed[this.start + i] : open[i - closedCount]),
      (u) => u.cost,
      input.contextWindow - input.reserveTokens - system.tokens,
      currentIndex,
    );
    const out: ChatMessage[] = [{ role: 'system', content: system.text }];
    for (const u of kept) for (const m of u.messages) out.push(m);
    return out;
  }

  /** The rendered system prompt and its tokens, kept while the agent's prompt and blocks stay the same. */
  private systemPrompt(system: string, blocks: MemoryBlockView[]) {
    const kept = this.system;
    if (kept && kept.system === system && kept.blocks === blocks) return kept;
    const text = renderSystemPrompt(system, blocks);
    return (this.system = { system, blocks, text, tokens: this.countTokens(text) });
  }

  private costedOpen(): CostedUnit[] {
    if (this.openUnits) return this.openUnits;
    const costs = new Map<string, number>();
    this.openUnits = toChatUnits(this.open).map((u) => {
      const key = u.ids.join('\n');
      const cost = this.openCosts.get(key) ?? unitCost(u, this.countTokens);
      costs.set(key, cost);
      return { ...u, cost };
    });
    this.openCosts = costs;
    return this.openUnits;
  }

  private costed(u: Unit): CostedUnit {
    return { ...u, cost: unitCost(u, this.countTokens) };
  }

  /** Where the unit of a user or system message is in `closed`; -1 when it is not (or no longer). */
  private closedIndexOf(id: string | null): number {
    const at = id === null ? undefined : this.unitOf.get(id);
    return at === undefined || at < this.dropped ? -1 : at - this.dropped;
  }

  /**
   * Drops the oldest closed units that no build can use any more: older than the current batch's
   * message (a batch's units are kept whole, batches only move forward) and older than units that
   * alone already fill `keepTokens` (every budget is at most the context window).
   */
  private evict(currentMessageId: string | null): void {
    const e = this.evicted;
    if (e && e.closed === this.closed.length && e.current === currentMessageId) return;
    this.evicted = { closed: this.closed.length, current: currentMessageId };
    const current = this.closedIndexOf(currentMessageId);
    let passedCurrent = current < this.start;
    let newer = 0;
    let i = this.closed.length - 1;
    for (; i >= this.start; i--) {
      if (newer >= this.keepTokens && passedCurrent) break;
      if (i === current) passedCurrent = true;
      newer += this.closed[i].cost;
    }
    if (i < this.start) return;
    this.start = i + 1;
    // compact now and then, not on every step
    if (this.start > 256 && this.start * 2 > this.closed.length) {
      this.closed = this.closed.slice(this.start);
      this.dropped += this.start;
      this.start = 0;
      for (const [id, at] of this.unitOf) if (at < this.dropped) this.unitOf.delete(id);
      this.evicted = { closed: this.closed.length, current: currentMessageId };
    }
  }
}
