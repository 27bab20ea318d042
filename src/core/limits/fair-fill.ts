/** A tenant with stored work due: how many items, and since when the oldest has been due. */
export interface DueTenant {
  tenantId: string;
  due: number;
  oldest: number;
}

/**
 * How many of `free` slots each tenant with due work gets (webhook deliveries and run callbacks,
 * docs/webhooks.md): the tenants with the fewest open (`open`) go first, then the one due longest, one
 * slot each per round, never past a tenant's due items nor past `perTenant` open with its new ones. So a
 * tenant whose targets hang holds at most its share, and a freed slot goes to a tenant with none open
 * rather than to the backlog it freed from. Pure: the caller claims and starts what it answers.
 */
export function fairFill(
  free: number,
  tenants: readonly DueTenant[],
  open: (tenantId: string) => number,
  perTenant: number,
): Map<string, number> {
  const order = [...tenants].sort(
    (a, b) => open(a.tenantId) - open(b.tenantId) || a.oldest - b.oldest,
  );
  const share = new Map<string, number>();
  for (let left = free, gave = true; left > 0 && gave;) {
    gave = false;
    for (const t of order) {
      if (left === 0) break;
      const n = share.get(t.tenantId) ?? 0;
      if (n >= t.due || open(t.tenantId) + n >= perTenant) continue;
      share.set(t.tenantId, n + 1);
      left--;
      gave = true;
    }
  }
  return share;
}
