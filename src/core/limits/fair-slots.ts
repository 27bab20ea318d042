/** Bounds of a `FairSlots`. */
export interface SlotLimits {
  /** Items running at once, every tenant's together. */
  total: number;
  /** Of those, one tenant's. */
  perTenant: number;
  /** One tenant's items waiting for a slot; one more is refused. */
  maxWaiting: number;
}

interface TenantLine<T> {
  running: number;
  waiting: { item: T; order: number }[];
}

/**
 * A concurrency bound shared fairly between tenants (search scans, docs/security.md; stored deliveries use `fairFill`): at most `total`
 * items running, `perTenant` of one tenant's, and `maxWaiting` of one tenant's waiting for a slot, in the
 * order they came. A freed slot goes to the waiting tenant with the fewest running (then the one whose next
 * item waits longest), so one tenant's slow items hold its own share, never another tenant's turn.
 * Pure: the caller starts what `push` and `done` answer, and calls `done` when it ends.
 */
export class FairSlots<T> {
  private readonly tenants = new Map<string, TenantLine<T>>();
  private running = 0;
  private order = 0;

  constructor(private readonly limits: SlotLimits) {}

  /** `start`: run it now (its slot is taken); `wait`: queued; `refused`: the tenant's queue is full. */
  push(tenant: string, item: T): 'start' | 'wait' | 'refused' {
    let line = this.tenants.get(tenant);
    if (!line) this.tenants.set(tenant, (line = { running: 0, waiting: [] }));
    // a tenant's own items never overtake each other
    if (
      line.waiting.length === 0 &&
      line.running < this.limits.perTenant &&
      this.running < this.limits.total
    ) {
      line.running++;
      this.running++;
      return 'start';
    }
    if (line.waiting.length >= this.limits.maxWaiting) {
      this.forgetIdle(tenant, line);
      return 'refused';
    }
    line.waiting.push({ item, order: this.order++ });
    return 'wait';
  }

  /** One of `tenant`'s items ended: answers the items to start now, each with its slot taken. */
  done(tenant: string): { tenant: string; item: T }[] {
    const line = this.tenants.get(tenant);
    if (line && line.running > 0) {
      line.running--;
      this.running--;
      this.forgetIdle(tenant, line);
    }
    const go: { tenant: string; item: T }[] = [];
    while (this.running < this.limits.total) {
      let next: [string, TenantLine<T>] | null = null;
      for (const entry of this.tenants) {
        const l = entry[1];
        if (l.waiting.length === 0 || l.running >= this.limits.perTenant) continue;
        const best = next?.[1];
        if (
          !best ||
          l.running < best.running ||
          (l.running === best.running && l.waiting[0].order < best.waiting[0].order)
        )
          next = entry;
      }
      if (!next) break;
      const [t, l] = next;
      l.running++;
      this.running++;
      go.push({ tenant: t, item: l.waiting.shift()!.item });
    }
    return go;
  }

  /** Takes every waiting item out (shutting down: none will start). */
  drain(): T[] {
    const out = [...this.tenants.values()]
      .flatMap((l) => l.waiting.splice(0))
      .sort((a, b) => a.order - b.order)
      .map((w) => w.item);
    for (const [t, l] of this.tenants) this.forgetIdle(t, l);
    return out;
  }

  private forgetIdle(tenant: string, line: TenantLine<T>): void {
    if (line.running === 0 && line.waiting.length === 0) this.tenants.delete(tenant);
  }
}
