/**
 * Per-tenant quotas (config `quotas.*`, docs/security.md "Quotas"): what one tenant may store in total,
 * and how many of its runs one instance processes at once. The operator sets defaults and may give single
 * tenants other numbers (`quotas.tenants`).
 */

/** What a tenant stores, counted in the database (`tenant_usage`), each with its default bound. */
export const STORED_QUOTAS = [
  'agents',
  'tools',
  'blocks',
  'archives',
  'passages',
  'conversations',
  'identities',
  'mcp_servers',
  'webhooks',
  'secrets',
] as const;
export type StoredQuota = (typeof STORED_QUOTAS)[number];

/**
 * `stored_bytes`: the bytes of what the tenant stores (src/core/limits/stored-bytes.ts), kept in
 * `tenant_bytes` rather than counted as rows.
 */
export const QUOTA_NAMES = [...STORED_QUOTAS, 'stored_bytes', 'running_runs'] as const;
export type QuotaName = (typeof QUOTA_NAMES)[number];

export type Quotas = Record<QuotaName, number>;

export interface QuotaSettings {
  /** Every tenant's bounds, unless `tenants` names the tenant and the quota. */
  defaults: Quotas;
  tenants: Record<string, Partial<Quotas>>;
}

/** The tenant's bound on `name`. */
export function quotaFor(settings: QuotaSettings, tenantId: string, name: QuotaName): number {
  return settings.tenants[tenantId]?.[name] ?? settings.defaults[name];
}

/** A quota the database keeps for the tenant: a count of rows, or the bytes it stores. */
export type TenantQuota = StoredQuota | 'stored_bytes';

/** A create that would take a stored count (or the stored bytes) past its bound: what the refusal names. */
export interface QuotaRefusal {
  quota: TenantQuota;
  limit: number;
  /** Stored with this create, had it been allowed. */
  used: number;
}

/**
 * Whether `used` (the count with this write in it) is within the bound; `added` is what the write added.
 * A write that adds nothing is never refused, also when the tenant is over a bound the operator lowered.
 */
export function quotaRefusal(
  quota: TenantQuota,
  limit: number,
  used: number,
  added: number,
): QuotaRefusal | null {
  return added > 0 && used > limit ? { quota, limit, used } : null;
}

/** The setting that bounds the tenant's `name`: its own number, or the default. */
export function quotaSetting(settings: QuotaSettings, tenantId: string, name: QuotaName): string {
  return settings.tenants[tenantId]?.[name] !== undefined
    ? `quotas.tenants.${tenantId}.${name}`
    : `quotas.${name}`;
}

/** One quota of a tenant as it stands: what it uses, its bound and the setting that gives it. */
export interface QuotaUsage {
  quota: QuotaName;
  used: number;
  limit: number;
  setting: string;
  /** `tenant`: counted over every instance (stored); `instance`: counted on the instance that answers. */
  scope: 'tenant' | 'instance';
}

/**
 * Every quota of the tenant: the stored counts (`stored`, a missing one is 0), the bytes it stores and its
 * runs processing on this instance (`runningHere`), each against its bound.
 */
export function quotaUsage(
  settings: QuotaSettings,
  tenantId: string,
  stored: Partial<Record<StoredQuota, number>>,
  storedBytes: number,
  runningHere: number,
): QuotaUsage[] {
  const of = (quota: QuotaName, used: number, scope: QuotaUsage['scope']): QuotaUsage => ({
    quota,
    used,
    limit: quotaFor(settings, tenantId, quota),
    setting: quotaSetting(settings, tenantId, quota),
    scope,
  });
  return [
    ...STORED_QUOTAS.map((q) => of(q, stored[q] ?? 0, 'tenant')),
    of('stored_bytes', storedBytes, 'tenant'),
    of('running_runs', runningHere, 'instance'),
  ];
}
