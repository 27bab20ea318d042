import { Inject, Injectable, Logger } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import {
  conflict,
  DomainError,
  validationFailed,
  type ValidationProblem,
} from '../common/domain-error';
import { AppConfig, SECRET_NAME } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { Clock } from '../core/ports';
import { requireCipher, SECRET_CIPHER, SecretCipher } from './secret-cipher';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { SecretsRepository } from './secrets.repository';
import { TENANT_WIDE, TenantSecretEntity } from './tenant-secret.entity';

/** A secret as the API shows it: never its value. */
export interface SecretView {
  name: string;
  source: 'api' | 'config';
  created_at: number | null;
  updated_at: number | null;
}

/** A secret in the API's answers: times as ISO 8601, as every other resource. */
export function toSecretResponse(v: SecretView) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    name: v.name,
    source: v.source,
    created_at: iso(v.created_at),
    updated_at: iso(v.updated_at),
  };
}

/** Header-safe text: no control characters (CR/LF would split a header). */
const hasControl = (v: string) =>
  [...v].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

/**
 * Tenant secrets: set over the API (sealed with AES-256-GCM under `secrets.encryption_key`) or by the
 * operator in `secrets.config`, plus the environment variables the operator allow-lists. `resolve` is the
 * only way to a value, at the last moment before a call; values never go into a response, log or error.
 */
@Injectable()
export class SecretsService {
  private readonly logger = new Logger('Secrets');
  /** tenant → name → value, from `secrets.config`. */
  private readonly fromConfig = new Map<string, Map<string, string>>();

  constructor(
    private readonly repo: SecretsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(SECRET_CIPHER) private readonly cipher: SecretCipher | null,
    private readonly quotas: TenantQuotas,
  ) {
    for (const s of config.secrets.config) {
      const m = this.fromConfig.get(s.tenant) ?? new Map<string, string>();
      m.set(s.name, s.value);
      this.fromConfig.set(s.tenant, m);
    }
  }

  /** Names (never values) of the tenant's own secrets, or of one agent's (`owner` = agent id). */
  async list(tenantId: string, owner = TENANT_WIDE): Promise<SecretView[]> {
    const stored = (await this.repo.listOwned(tenantId, owner)).map((r): SecretView => ({
      name: r.name,
      source: 'api',
      created_at: r.created_at,
      updated_at: r.updated_at,
    }));
    if (owner !== TENANT_WIDE) return stored;
    const configured = [...(this.fromConfig.get(tenantId)?.keys() ?? [])].map(
      (name): SecretView => ({ name, source: 'config', created_at: null, updated_at: null }),
    );
    return [...configured, ...stored].sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Names (never values) of several agents' own secrets: owner → its secrets. */
  async listForOwners(tenantId: string, owners: string[]): Promise<Map<string, SecretView[]>> {
    const out = new Map<string, SecretView[]>();
    for (const r of await this.repo.listOwnedBy(tenantId, owners))
      out.set(r.owner, [
        ...(out.get(r.owner) ?? []),
        { name: r.name, source: 'api', created_at: r.created_at, updated_at: r.updated_at },
      ]);
    return out;
  }

  /** Sets (creates or replaces) a secret; the value is checked, sealed and never echoed. */
  async put(
    tenantId: string,
    name: string,
    body: unknown,
    owner = TENANT_WIDE,
  ): Promise<SecretView> {
    const value = this.checkValue(name, body);
    if (owner === TENANT_WIDE && this.fromConfig.get(tenantId)?.has(name))
      throw conflict('SECRET_READ_ONLY', `secret ${name} is set in the server configuration`, {
        name,
      });
    const cipher = requireCipher(this.cipher);
    const existing = await this.repo.find(tenantId, owner, name);
    const now = this.clock.now();
    const row = Object.assign(new TenantSecretEntity(), {
      tenant_id: tenantId,
      owner,
      name,
      sealed: cipher.encrypt(value, aad(tenantId, owner, name)),
      created_at: existing?.created_at ?? now,
      updated_at: now,
    });
    await this.repo.put(row);
    return { name, source: 'api', created_at: row.created_at, updated_at: row.updated_at };
  }

  async delete(tenantId: string, name: string, owner = TENANT_WIDE): Promise<void> {
    if (owner === TENANT_WIDE && this.fromConfig.get(tenantId)?.has(name))
      throw conflict('SECRET_READ_ONLY', `secret ${name} is set in the server configuration`, {
        name,
      });
    if (!(await this.repo.remove(tenantId, owner, name)))
      throw new DomainError('not_found', 'SECRET_NOT_FOUND', `no secret named ${name}`, { name });
  }

  /**
   * Letta's agent-level `secrets` / `tool_exec_environment_variables` (`{NAME: value}` or `[{key, value}]`)
   * in an agent body, checked: undefined when the body names neither. Call before the agent is saved.
   */
  agentSecretsIn(body: unknown): { name: string; value: string }[] | undefined {
    if (typeof body !== 'object' || body === null) return undefined;
    const b = body as Record<string, unknown>;
    const fields = ['secrets', 'tool_exec_environment_variables'].filter((f) => b[f] != null);
    if (fields.length === 0) return undefined;
    const out: { name: string; value: string }[] = [];
    const problems: { path: string; message: string }[] = [];
    for (const f of fields) {
      const raw = b[f];
      const entries: [string, unknown][] = Array.isArray(raw)
        ? raw.map((e: unknown) => {
            const o = (typeof e === 'object' && e !== null ? e : {}) as Record<string, unknown>;
            return [typeof o.key === 'string' ? o.key : '', o.value];
          })
        : typeof raw === 'object'
          ? Object.entries(raw as Record<string, unknown>)
          : [];
      if (!Array.isArray(raw) && typeof raw !== 'object')
        problems.push({ path: f, message: 'must be an object of NAME → value' });
      for (const [name, value] of entries) {
        // no error thrown per entry: 450,000 of them took 15 s of the event loop
        const bad = this.valueProblems(name, value);
        if (bad.length === 0) out.push({ name, value: value as string });
        for (const p of bad)
          problems.push({ path: `${f}.${name}`, message: `${p.path} ${p.message}` });
      }
    }
    if (problems.length) throw validationFailed(problems, 'agent is invalid');
    if (out.length) requireCipher(this.cipher);
    return out;
  }

  /**
   * Refuses (409 QUOTA_EXCEEDED) an agent's secrets that would take the tenant past `quotas.secrets` once
   * they replace the agent's own (`owner`: none for a new agent). Called before the agent is written, so a
   * refused request changes nothing; `replaceOwned` checks again, exactly.
   */
  async assertRoomFor(
    tenantId: string,
    owner: string | null,
    entries: { name: string; value: string }[],
  ): Promise<void> {
    const replaced = owner === null ? 0 : await this.repo.countOwned(tenantId, owner);
    await this.quotas.assertRoom(
      tenantId,
      'secrets',
      new Set(entries.map((e) => e.name)).size - replaced,
    );
  }

  /** Replaces an agent's own secrets with these (Letta's agent-level secrets), in one transaction. */
  async replaceOwned(
    tenantId: string,
    owner: string,
    entries: { name: string; value: string }[],
  ): Promise<void> {
    const cipher = requireCipher(this.cipher);
    const now = this.clock.now();
    // a name given twice: the last value, as when they were set one after another
    const values = new Map(entries.map((e) => [e.name, e.value]));
    const rows = [...values].map(([name, value]) =>
      Object.assign(new TenantSecretEntity(), {
        tenant_id: tenantId,
        owner,
        name,
        sealed: cipher.encrypt(value, aad(tenantId, owner, name)),
        created_at: now,
        updated_at: now,
      }),
    );
    await this.repo.replaceOwner(tenantId, owner, rows);
  }

  /** Drops an agent's own secrets (the agent is gone). */
  async deleteOwner(tenantId: string, owner: string): Promise<void> {
    await this.repo.removeOwner(tenantId, owner);
  }

  /**
   * Why each `${NAME}` may not be declared by this tenant (the names that may are left out): it must be one
   * of the tenant's secrets (any owner, API or configuration) or an allow-listed environment variable. One
   * read, however many names a declaration holds (80,000 in one header were 80,000 queries).
   */
  async refusalsFor(tenantId: string, names: string[]): Promise<Map<string, string>> {
    const refused = new Map<string, string>();
    const stored = names.length ? await this.repo.namesOf(tenantId) : new Set<string>();
    for (const name of names) {
      if (this.config.tools.http.env_allowlist.includes(name)) continue;
      if (this.fromConfig.get(tenantId)?.has(name) || stored.has(name)) continue;
      refused.set(
        name,
        `names \${${name}}, which is neither one of your secrets (PUT /v1/secrets/${name}) nor an environment variable the operator allow-lists`,
      );
    }
    return refused;
  }

  /** For a tool file (global): a name the operator allow-lists or sets for some tenant in configuration. */
  refusalForOperator(name: string): string | null {
    if (this.config.tools.http.env_allowlist.includes(name)) return null;
    for (const m of this.fromConfig.values()) if (m.has(name)) return null;
    return `names \${${name}}, which is neither in tools.http.env_allowlist nor in secrets.config`;
  }

  /**
   * The values of these names for a call by this tenant (and agent): the agent's own secret, else the
   * tenant's, else the operator's configuration for the tenant, else an allow-listed environment variable.
   * Names with no value are left out. Implements the MCP module's TenantSecrets port.
   */
  async resolve(
    tenantId: string,
    names: string[],
    agentId?: string,
  ): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    const wanted = [...new Set(names)];
    for (const n of wanted) {
      const env = this.config.tools.http.env_allowlist.includes(n)
        ? this.config.secrets_env[n]
        : undefined;
      if (env !== undefined) out[n] = env;
      const configured = this.fromConfig.get(tenantId)?.get(n);
      if (configured !== undefined) out[n] = configured;
    }
    const owners = agentId ? [TENANT_WIDE, agentId] : [TENANT_WIDE];
    const rows = this.cipher ? await this.repo.findNamed(tenantId, owners, wanted) : [];
    // the tenant-wide row first, so an agent's own secret wins
    rows.sort((a, b) => (a.owner === b.owner ? 0 : a.owner === TENANT_WIDE ? -1 : 1));
    for (const r of rows) {
      try {
        out[r.name] = this.cipher!.decrypt(r.sealed, aad(r.tenant_id, r.owner, r.name));
      } catch {
        // a changed encryption key: the secret counts as not set; say which, never what
        this.logger.warn(
          `secret ${r.name} of tenant ${r.tenant_id} does not decrypt with the configured key`,
        );
      }
    }
    return out;
  }

  private checkValue(name: string, body: unknown): string {
    const value =
      typeof body === 'object' && body !== null ? (body as { value?: unknown }).value : undefined;
    const problems = this.valueProblems(name, value);
    if (problems.length) throw validationFailed(problems, 'secret is invalid');
    return value as string;
  }

  private valueProblems(name: string, value: unknown): ValidationProblem[] {
    const problems: ValidationProblem[] = [];
    if (!SECRET_NAME.test(name))
      problems.push({
        path: 'name',
        message: 'must be letters, digits and _, not starting with a digit, at most 128',
      });
    if (typeof value !== 'string' || value === '')
      problems.push({ path: 'value', message: 'is required: a non-empty string' });
    else if (Buffer.byteLength(value) > this.config.secrets.max_value_bytes)
      problems.push({
        path: 'value',
        message: `must be at most ${this.config.secrets.max_value_bytes} bytes`,
      });
    else if (hasControl(value))
      problems.push({
        path: 'value',
        message: 'must not contain control characters (it goes into a header)',
      });
    return problems;
  }
}

/** Binds a sealed value to its tenant, owner and name. */
const aad = (tenantId: string, owner: string, name: string) =>
  `${tenantId}\u0000${owner}\u0000${name}`;
