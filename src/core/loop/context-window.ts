import type { ChatMessage } from '../../models/model-provider';
import {
  BuiltContext,
  ContextInput,
  HistoryMessage,
  MemoryBlockView,
  renderSystemPrompt,
  toChatUnits,
  Unit,
  unitCost,
  UnitGrouper,
} from './context-builder';

/** Chat messages with their token cost, counted once, and whether a message of them carries image parts. */
interface Costed {
  messages: ChatMessage[];
  cost: number;
  images: number;
}

/** An open unit, costed: its message ids find the current message among them. */
type CostedUnit = Unit & Costed;

export type WindowInput = Omit<ContextInput, 'history' | 'countTokens'>;

/**
 * An agent's in-context window kept across steps, so that a step's cost does not depend on how long the
 * history is: messages are appended as they are stored, each unit's tokens are counted once, and units
 * that could never fit the context window again are evicted. Builds exactly what `buildContext` builds
 * from the whole history: a user or system message always closes the unit before it, so the units before
 * the last such message never change; only the messages after it (the current batch) are re-grouped.
 */
export class ContextWindow {
  /**
   * Units that can no longer change ("closed"), oldest first, kept as arrays rather than one object each
   * (a full window holds hundreds; what stays live costs V8 a multiple of it in heap): unit `i` is
   * `messages[firstMessage[i] .. firstMessage[i + 1])`, costs `prefix[i + 1] - prefix[i]` and has
   * images when `imagePrefix` grows there. From `start` on; earlier ones are evicted.
   */
  private start = 0;
  /** `prefix[i]`: the cost of the closed units before `i`, so any run of them is costed in one subtraction. */
  private prefix: number[] = [0];
  /** `imagePrefix[i]`: how many closed units before `i` carry images, as `prefix` does for the costs. */
  private imagePrefix: number[] = [0];
  private messages: ChatMessage[] = [];
  private firstMessage: number[] = [0];
  /** Units dropped from the front of the closed ones (their compactions): `unitOf` counts them too. */
  private dropped = 0;
  /** Each user or system message's unit, as `dropped` + its closed index (finds the current one). */
  private readonly unitOf = new Map<string, number>();
  /** Messages after the last user/system message, grouped as they come: only the last turn may change. */
  private open = new UnitGrouper();
  /** The open batch's ended turns, costed (as many as `open.units` once built). */
  private openEnded: CostedUnit[] = [];
  /** The open batch's current turn, costed: kept while `open.pending()` returns the same unit. */
  private openCurrent: CostedUnit | null = null;
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
        for (const u of this.costedOpen()) this.close(u);
        this.open = new UnitGrouper();
        this.openEnded = [];
        this.openCurrent = null;
        for (const u of toChatUnits([m])) this.close(this.costed(u));
        this.unitOf.set(m.id, this.dropped + this.closedTotal - 1);
      } else {
        this.open.add(m);
      }
    }
  }

  /**
   * As `selectUnits` over the kept units, but the older units (before the current batch) are taken by
   * their prefix sums and their messages as one slice: a step's cost depends on the batch, not on how
   * many older messages the window holds.
   */
  build(input: WindowInput): BuiltContext {
    this.evict(input.currentMessageId);
    const current = this.closedIndexOf(input.currentMessageId);
    const system = this.systemPrompt(input.system, input.blocks);
    const open = this.costedOpen();
    const closedCount = this.closedTotal - this.start;
    const count = closedCount + open.length;
    const unit = (i: number): Costed =>
      i < closedCount ? this.closedUnit(this.start + i) : open[i - closedCount];
    let currentIndex = current >= this.start ? current - this.start : -1;
    // the current message is a user message, so it is closed; an id of an open unit is later still
    if (input.currentMessageId !== null)
      for (let i = open.length - 1; i >= 0; i--)
        if (open[i].ids.includes(input.currentMessageId)) {
          currentIndex = closedCount + i;
          break;
        }
    let budget = input.contextWindow - input.reserveTokens - system.tokens;
    // the current batch's units, newest first, skipping one that does not fit unless it is the current
    const firstBatchUnit = currentIndex >= 0 ? currentIndex : count;
    const batch: Costed[] = [];
    for (let i = count - 1; i >= firstBatchUnit; i--) {
      const u = unit(i);
      if (u.cost > budget && i !== currentIndex) continue;
      budget -= u.cost;
      batch.push(u);
    }
    // older units, newest first, up to the first that does not fit: open ones one by one, then closed ones
    const olderOpen: Costed[] = [];
    let i = firstBatchUnit - 1;
    for (; i >= closedCount; i--) {
      const u = open[i - closedCount];
      if (u.cost > budget) break;
      budget -= u.cost;
      olderOpen.push(u);
    }
    const end = this.start + Math.min(firstBatchUnit, closedCount);
    let from = end;
    if (i < closedCount) {
      // the oldest `from` whose units up to `end` fit: costs are positive, so the sums only grow
      const least = this.prefix[end] - budget;
      let lo = this.start;
      while (lo < from) {
        const mid = (lo + from) >> 1;
        if (this.prefix[mid] >= least) from = mid;
        else lo = mid + 1;
      }
    }
    // sized once: a full window holds hundreds of messages, and growing the array copied them over again
    const units = [...olderOpen.reverse(), ...batch.reverse()];
    const first = this.firstMessage[from];
    const last = this.firstMessage[end];
    const out = new Array<ChatMessage>(
      units.reduce((n, u) => n + u.messages.length, 1 + last - first),
    );
    out[0] = { role: 'system', content: system.text };
    let k = 1;
    for (let m = first; m < last; m++) out[k++] = this.messages[m];
    let tokens = system.tokens + this.prefix[end] - this.prefix[from];
    let images = this.imagePrefix[end] - this.imagePrefix[from];
    for (const u of units) {
      for (const m of u.messages) out[k++] = m;
      tokens += u.cost;
      images += u.images;
    }
    return { messages: out, tokens, images: images > 0 };
  }

  /**
   * The tokens of the units this window holds in memory (the evicted ones not yet compacted away too), the
   * open batch's as of the last build (what was appended since is counted at the next build): what the
   * window cache is bounded by.
   */
  get heldTokens(): number {
    let n = this.prefix[this.closedTotal] - this.prefix[0];
    for (const u of this.openEnded) n += u.cost;
    return n + (this.openCurrent?.cost ?? 0);
  }

  /** The rendered system prompt and its tokens, kept while the agent's prompt and blocks stay the same. */
  private systemPrompt(system: string, blocks: MemoryBlockView[]) {
    const kept = this.system;
    if (kept && kept.system === system && kept.blocks === blocks) return kept;
    const text = renderSystemPrompt(system, blocks);
    return (this.system = { system, blocks, text, tokens: this.countTokens(text) });
  }

  /** The open batch as costed units: each ended turn costed once, the current one once per change. */
  private costedOpen(): CostedUnit[] {
    const ended = this.open.units;
    for (let i = this.openEnded.length; i < ended.length; i++) {
      const u = ended[i];
      this.openEnded.push(this.openCurrent?.ids === u.ids ? this.openCurrent : this.costed(u));
    }
    const current = this.open.pending();
    if (!current) {
      this.openCurrent = null; // ended above, or dropped (a call without its result): not held twice
      return this.openEnded;
    }
    if (this.openCurrent?.ids !== current.ids) this.openCurrent = this.costed(current);
    return [...this.openEnded, this.openCurrent];
  }

  private costed(u: Unit): CostedUnit {
    return {
      ...u,
      cost: unitCost(u, this.countTokens),
      images: u.messages.some((m) => Array.isArray(m.content)) ? 1 : 0,
    };
  }

  private get closedTotal(): number {
    return this.prefix.length - 1;
  }

  private closedUnit(i: number): Costed {
    return {
      messages: this.messages.slice(this.firstMessage[i], this.firstMessage[i + 1]),
      cost: this.prefix[i + 1] - this.prefix[i],
      images: this.imagePrefix[i + 1] - this.imagePrefix[i],
    };
  }

  private close(u: Costed): void {
    this.prefix.push(this.prefix[this.prefix.length - 1] + u.cost);
    this.imagePrefix.push(this.imagePrefix[this.imagePrefix.length - 1] + u.images);
    for (const m of u.messages) this.messages.push(m);
    this.firstMessage.push(this.messages.length);
  }

  /** The closed index of a user or system message's unit; -1 when it is not (or no longer) kept. */
  private closedIndexOf(id: string | null): number {
    const at = id === null ? undefined : this.unitOf.get(id);
    return at === undefined || at < this.dropped ? -1 : at - this.dropped;
  }

  /**
   * Drops the oldest closed units that no build can use any more. The units before the current batch's
   * message are taken newest first up to the first that does not fit, so the units older than a run of
   * them that alone fills `keepTokens` (every budget is at most the context window) are never reached.
   * The batch's own units do not count: one that does not fit is skipped, and the older ones still come.
   * Batches only move forward, so a later build's older units include these.
   */
  private evict(currentMessageId: string | null): void {
    const e = this.evicted;
    if (e && e.closed === this.closedTotal && e.current === currentMessageId) return;
    this.evicted = { closed: this.closedTotal, current: currentMessageId };
    const current = this.closedIndexOf(currentMessageId);
    const end = current >= this.start ? current : this.closedTotal;
    // the newest `k` whose units from `k` up to `end` alone fill keepTokens
    const most = this.prefix[end] - this.keepTokens;
    if (this.prefix[this.start] > most) return;
    let lo = this.start;
    let hi = end;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.prefix[mid] <= most) lo = mid;
      else hi = mid - 1;
    }
    if (lo <= this.start) return;
    this.start = lo;
    // compact now and then, not on every step
    if (this.start > 256 && this.start * 2 > this.closedTotal) {
      const firstKept = this.firstMessage[this.start];
      this.prefix = this.prefix.slice(this.start);
      this.imagePrefix = this.imagePrefix.slice(this.start);
      this.messages = this.messages.slice(firstKept);
      this.firstMessage = this.firstMessage.slice(this.start).map((m) => m - firstKept);
      this.dropped += this.start;
      this.start = 0;
      for (const [id, at] of this.unitOf) if (at < this.dropped) this.unitOf.delete(id);
      this.evicted = { closed: this.closedTotal, current: currentMessageId };
    }
  }
}
