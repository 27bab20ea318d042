/**
 * Per-tenant quotas (config `quotas.*`, docs/security.md "Quotas and fair share"): how many of a tenant's
 * runs one instance processes at once. The operator sets defaults and may give single tenants other
 * numbers (`quotas.tenants`).
 */

export const QUOTA_NAMES = ['running_runs'] as const;
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
