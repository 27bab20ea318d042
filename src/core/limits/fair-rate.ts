import { type Bucket, takeToken } from './token-bucket';

interface TenantLine<T> {
  /** The tag of the tenant's next call: how far its calls served have gone in the shared turn. */
  next: number;
  waiting: { item: T; order: number }[];
}

/**
 * A rate shared fairly between tenants (a model provider's `requests_per_minute`, docs/security.md "Model
 * calls"): a token bucket (`perMinute`, saving up one second's worth, at least one) whose tokens, while
 * calls wait, go to the tenants in turn. Start-time fair queuing with equal weights: a tenant's next call
 * is tagged one past its last one served, and never below the tag served last, so a tenant that starts
 * waiting joins the turn where it stands; the smallest tag goes first, on a tie the call waiting longest.
 * So a tenant's backlog takes one token in turn with each other tenant waiting, and a tenant's first call
 * waits for at most one token per other tenant waiting, however many calls they have queued. Within a
 * tenant, its calls go in the order they came. Pure: the caller passes the time and keeps the items.
 */
export class FairRate<T> {
  private bucket: Bucket | undefined;
  private readonly tenants = new Map<string, TenantLine<T>>();
  /** The tag served last. */
  private served = 0;
  private order = 0;
  private readonly perSecond: number;
  private readonly burst: number;

  constructor(perMinute: number) {
    this.perSecond = perMinute / 60;
    this.burst = Math.max(1, Math.floor(this.perSecond));
  }

  /** Queues `item`, a call of `tenant`; `release` says when it may go. */
  push(tenant: string, item: T): void {
    let line = this.tenants.get(tenant);
    if (!line) this.tenants.set(tenant, (line = { next: this.served, waiting: [] }));
    if (line.waiting.length === 0) line.next = Math.max(line.next, this.served);
    line.waiting.push({ item, order: this.order++ });
  }

  /** Takes a waiting item out (its call was given up); false when it is not waiting. */
  remove(tenant: string, item: T): boolean {
    const waiting = this.tenants.get(tenant)?.waiting;
    const i = waiting?.findIndex((w) => w.item === item) ?? -1;
    if (i < 0) return false;
    waiting!.splice(i, 1);
    return true;
  }

  /** Calls waiting, per tenant (tenants with none are left out). */
  waiting(): Map<string, number> {
    const out = new Map<string, number>();
    for (const [tenant, line] of this.tenants)
      if (line.waiting.length) out.set(tenant, line.waiting.length);
    return out;
  }

  /**
   * The items whose turn has come at `now`, in the order they go; and when calls still wait, in how
   * many ms the next token is due (null when none waits).
   */
  release(now: number): { go: T[]; retryAfterMs: number | null } {
    const go: T[] = [];
    for (;;) {
      const next = this.first();
      if (!next) {
        this.forgetIdle();
        return { go, retryAfterMs: null };
      }
      const take = takeToken(this.bucket, this.perSecond, this.burst, now);
      this.bucket = take.bucket;
      if (!take.allowed) {
        this.forgetIdle();
        return { go, retryAfterMs: take.retryAfterMs };
      }
      this.served = next.next;
      next.next++;
      go.push(next.waiting.shift()!.item);
    }
  }

  /** The tenant whose call goes next: the smallest tag, then the call waiting longest. */
  private first(): TenantLine<T> | null {
    let best: TenantLine<T> | null = null;
    for (const line of this.tenants.values()) {
      if (line.waiting.length === 0) continue;
      if (
        !best ||
        line.next < best.next ||
        (line.next === best.next && line.waiting[0].order < best.waiting[0].order)
      )
        best = line;
    }
    return best;
  }

  /** Tenants with no call waiting whose next call would join where the turn stands: nothing to remember. */
  private forgetIdle(): void {
    for (const [tenant, line] of this.tenants)
      if (line.waiting.length === 0 && line.next <= this.served) this.tenants.delete(tenant);
  }
}
