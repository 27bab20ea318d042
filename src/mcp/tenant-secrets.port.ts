/**
 * A tenant's secrets, resolved at the last moment for an MCP server's env or headers. The tenant secret
 * store (`PUT /v1/secrets/{name}`, SecretsService) implements it: the tenant's own secrets and the
 * environment variables the operator allow-lists, never the rest of the environment.
 */
export interface TenantSecrets {
  resolve(tenantId: string, names: string[]): Promise<Record<string, string>>;
}

export const TENANT_SECRETS = Symbol('TENANT_SECRETS');
