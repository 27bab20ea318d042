import { Inject, Injectable } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { badRequest, conflict, notFound, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR, isPrefixedId } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { readLimit } from '../core/limits';
import {
  IDENTITY_TYPES,
  IdentityDraft,
  IdentityLimits,
  IdentityProperty,
  mergeProperties,
  validateIdentityInput,
  validateProperties,
} from '../core/identities/validate-identity';
import type { Clock, IdGenerator } from '../core/ports';
import type { ValidationProblem } from '../core/rules/validate-tool-rules';
import { IdentitiesRepository, ListIdentitiesQuery } from './identities.repository';
import { IdentityEntity } from './identity.entity';

/** Letta's Identity as answered (`block_ids` is always empty: blocks are not linked to identities here). */
export interface IdentityView {
  id: string;
  identifier_key: string;
  name: string;
  identity_type: string;
  project_id: null;
  agent_ids: string[];
  block_ids: string[];
  properties: IdentityProperty[];
}

/** Which of these agent ids are the tenant's (the agents module answers). */
export type AgentExistence = (tenantId: string, agentIds: string[]) => Promise<Set<string>>;

const one = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);

/** Letta's identities (`/v1/identities`) and the agents they are attached to, per tenant. */
@Injectable()
export class IdentitiesService {
  private agentsExist: AgentExistence = () => Promise.resolve(new Set());

  constructor(
    private readonly repo: IdentitiesRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  /** The agents module tells which agent ids exist (it imports this module, not the other way). */
  registerAgentExistence(fn: AgentExistence): void {
    this.agentsExist = fn;
  }

  private get limits(): IdentityLimits {
    const c = this.config.identities;
    return {
      max_properties: c.max_properties,
      max_properties_bytes: c.max_properties_bytes,
      max_agents: c.max_agents_per_request,
    };
  }

  // ------------------------------------------------------------ /v1/identities

  async list(tenantId: string, raw: Record<string, unknown>): Promise<IdentityView[]> {
    const problems: ValidationProblem[] = nulBytePaths(raw);
    const q: ListIdentitiesQuery = {
      name: null,
      identifierKey: null,
      identityType: null,
      limit: 50,
      maxBytes: this.config.limits.max_page_bytes,
      order: 'desc',
    };
    const text = (k: string) => {
      const v = one(raw[k]);
      if (v === undefined || v === '') return null;
      if (typeof v !== 'string' || v.length > 200) {
        problems.push({ path: k, message: 'must be a text of at most 200 characters' });
        return null;
      }
      return v;
    };
    q.name = text('name');
    q.identifierKey = text('identifier_key');
    q.identityType = text('identity_type');
    if (q.identityType !== null && !(IDENTITY_TYPES as readonly string[]).includes(q.identityType))
      problems.push({
        path: 'identity_type',
        message: `must be one of ${IDENTITY_TYPES.join(', ')}`,
      });
    q.limit = readLimit(raw.limit, q.limit, 'max_page_size', this.config.limits, problems);
    const order = one(raw.order);
    if (order === 'asc' || order === 'desc') q.order = order;
    else if (order !== undefined && order !== '')
      problems.push({ path: 'order', message: 'must be asc or desc' });
    const after = text('after');
    const before = text('before');
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const cursor = async (id: string | null) => {
      if (id === null) return null;
      const found = isPrefixedId('identity', id)
        ? await this.repo.findForTenant(tenantId, id)
        : null;
      if (!found)
        throw badRequest('UNKNOWN_CURSOR', `cursor ${JSON.stringify(id)} is not an identity id`);
      return found;
    };
    const rows = await this.repo.list(tenantId, q, {
      after: await cursor(after),
      before: await cursor(before),
    });
    return this.views(tenantId, rows);
  }

  count(tenantId: string): Promise<number> {
    return this.repo.count(tenantId);
  }

  async get(tenantId: string, id: string): Promise<IdentityView> {
    return (await this.views(tenantId, [await this.load(tenantId, id)]))[0];
  }

  async create(tenantId: string, body: unknown): Promise<IdentityView> {
    const draft = await this.validated(tenantId, body, false);
    return this.insert(tenantId, draft);
  }

  /**
   * Letta's `PUT /v1/identities/`: by identifier_key, the tenant's identity is updated (the given
   * properties and agents replace the identity's, as Letta's `replace=True`), or created.
   */
  async upsert(tenantId: string, body: unknown): Promise<IdentityView> {
    const draft = await this.validated(tenantId, body, false);
    const existing = await this.repo.findByKey(tenantId, draft.identifier_key!);
    if (!existing) return this.insert(tenantId, draft);
    return this.apply(tenantId, existing, draft);
  }

  /**
   * Letta's `PATCH /v1/identities/{id}` (its `replace=False`): the given properties replace those of
   * their keys and the others stay; the given agents are added to the identity's.
   */
  async update(tenantId: string, id: string, body: unknown): Promise<IdentityView> {
    const row = await this.load(tenantId, id);
    const { agent_ids, properties, ...fields } = await this.validated(tenantId, body, true);
    await this.assertKeyFree(tenantId, row, fields.identifier_key);
    await this.checkAgentCapacity(tenantId, row.id, agent_ids);
    const saved = await this.repo.modify(
      tenantId,
      id,
      (current) => {
        Object.assign(current, fields, { updated_at: this.clock.now() });
        if (!properties) return;
        const problems: ValidationProblem[] = [];
        const merged = validateProperties(
          mergeProperties(current.properties, properties),
          'properties',
          this.limits,
          problems,
        );
        if (!merged) throw validationFailed(problems, 'identity is invalid');
        current.properties = merged;
      },
      agent_ids ?? [],
    );
    if (saved === null) throw notFound('identity', id);
    if (!saved) throw keyTaken(fields.identifier_key ?? row.identifier_key);
    return this.get(tenantId, id);
  }

  /** Letta's `PUT /v1/identities/{id}/properties`: the list replaces the identity's properties. */
  async putProperties(tenantId: string, id: string, body: unknown): Promise<IdentityView> {
    const row = await this.load(tenantId, id);
    const problems: ValidationProblem[] = nulBytePaths(body);
    const props = problems.length
      ? null
      : validateProperties(body, 'properties', this.limits, problems);
    if (!props) throw validationFailed(problems, 'properties are invalid');
    return this.apply(tenantId, row, { properties: props });
  }

  async delete(tenantId: string, id: string): Promise<void> {
    assertPrefixedId('identity', 'identity', id);
    if (!(await this.repo.remove(tenantId, id))) throw notFound('identity', id);
  }

  // ------------------------------------------------------------ for the agents module

  /** The tenant's identities among `ids` (400 at `path` naming an unknown one; bounded per agent). */
  async checkIds(tenantId: string, ids: unknown, path: string): Promise<string[]> {
    if (!Array.isArray(ids) || ids.some((i) => typeof i !== 'string'))
      throw validationFailed([{ path, message: 'must be a list of identity ids' }]);
    const wanted = [...new Set(ids as string[])];
    const max = this.config.identities.max_per_agent;
    if (wanted.length > max)
      throw validationFailed([
        {
          path,
          message: `has ${wanted.length} items; at most ${max} (identities.max_per_agent)`,
          limit: 'identities.max_per_agent',
        },
      ]);
    const valid = wanted.filter((i) => isPrefixedId('identity', i));
    const found = new Set((await this.repo.findManyForTenant(tenantId, valid)).map((r) => r.id));
    const missing = wanted.findIndex((i) => !found.has(i));
    if (missing >= 0)
      throw validationFailed([{ path: `${path}[${missing}]`, message: 'unknown identity id' }]);
    return wanted;
  }

  setForAgent(tenantId: string, agentId: string, identityIds: string[]): Promise<void> {
    return this.repo.setForAgent(tenantId, agentId, identityIds);
  }

  /** Attaches an identity to an agent the caller has checked is the tenant's; idempotent. */
  async attach(tenantId: string, agentId: string, identityId: string): Promise<void> {
    await this.load(tenantId, identityId);
    const max = this.config.identities.max_per_agent;
    const current = await this.repo.identityIdsOf(tenantId, [agentId]);
    if ((current.get(agentId) ?? []).includes(identityId)) return;
    if ((current.get(agentId)?.length ?? 0) >= max)
      throw validationFailed([
        {
          path: 'identity_id',
          message: `the agent has ${max} identities already (identities.max_per_agent)`,
          limit: 'identities.max_per_agent',
        },
      ]);
    await this.repo.link(tenantId, agentId, identityId);
  }

  async detach(tenantId: string, agentId: string, identityId: string): Promise<void> {
    await this.load(tenantId, identityId);
    await this.repo.unlink(tenantId, agentId, identityId);
  }

  /** Agent id → its identities, for these agents of the tenant. */
  async forAgents(tenantId: string, agentIds: string[]): Promise<Map<string, IdentityView[]>> {
    const links = await this.repo.identityIdsOf(tenantId, agentIds);
    const ids = [...new Set([...links.values()].flat())];
    const views = new Map(
      (await this.views(tenantId, await this.repo.findManyForTenant(tenantId, ids))).map((v) => [
        v.id,
        v,
      ]),
    );
    const out = new Map<string, IdentityView[]>();
    for (const [agentId, idList] of links)
      out.set(
        agentId,
        idList.map((i) => views.get(i)).filter((v): v is IdentityView => v !== undefined),
      );
    return out;
  }

  /** The agent is gone: so are its links. */
  removeAgent(tenantId: string, agentId: string): Promise<void> {
    return this.repo.removeAgent(tenantId, agentId);
  }

  // ------------------------------------------------------------ internals

  private async load(tenantId: string, id: string): Promise<IdentityEntity> {
    assertPrefixedId('identity', 'identity', id);
    const row = await this.repo.findForTenant(tenantId, id);
    if (!row) throw notFound('identity', id);
    return row;
  }

  private async validated(
    tenantId: string,
    body: unknown,
    partial: boolean,
  ): Promise<IdentityDraft> {
    const nul = nulBytePaths(body);
    if (nul.length) throw validationFailed(nul, 'identity is invalid');
    const { draft, problems } = validateIdentityInput(body, this.limits, partial);
    if (!draft) throw validationFailed(problems, 'identity is invalid');
    if (draft.agent_ids) {
      const mine = await this.agentsExist(
        tenantId,
        draft.agent_ids.filter((i) => isPrefixedId('agent', i)),
      );
      const missing = draft.agent_ids.findIndex((i) => !mine.has(i));
      if (missing >= 0)
        throw validationFailed(
          [{ path: `agent_ids[${missing}]`, message: 'unknown agent id' }],
          'identity is invalid',
        );
    }
    return draft;
  }

  private async insert(tenantId: string, draft: IdentityDraft): Promise<IdentityView> {
    // looked up first so the common case is no failed insert; the unique index settles races
    if (await this.repo.findByKey(tenantId, draft.identifier_key!))
      throw keyTaken(draft.identifier_key!);
    const now = this.clock.now();
    const row = Object.assign(new IdentityEntity(), {
      id: this.ids.prefixed('identity'),
      tenant_id: tenantId,
      identifier_key: draft.identifier_key!,
      name: draft.name!,
      identity_type: draft.identity_type!,
      properties: draft.properties ?? [],
      created_at: now,
      updated_at: now,
    });
    await this.checkAgentCapacity(tenantId, row.id, draft.agent_ids);
    if (!(await this.repo.insert(row, draft.agent_ids ?? []))) throw keyTaken(row.identifier_key);
    return this.get(tenantId, row.id);
  }

  private async apply(
    tenantId: string,
    row: IdentityEntity,
    draft: IdentityDraft,
  ): Promise<IdentityView> {
    const { agent_ids, ...fields } = draft;
    await this.assertKeyFree(tenantId, row, fields.identifier_key);
    Object.assign(row, fields, { updated_at: this.clock.now() });
    await this.checkAgentCapacity(tenantId, row.id, agent_ids);
    if (!(await this.repo.save(row, agent_ids))) throw keyTaken(row.identifier_key);
    return this.get(tenantId, row.id);
  }

  /** 409 when the identity would take another's identifier_key (the unique index settles races). */
  private async assertKeyFree(
    tenantId: string,
    row: IdentityEntity,
    key: string | undefined,
  ): Promise<void> {
    if (
      key !== undefined &&
      key !== row.identifier_key &&
      (await this.repo.findByKey(tenantId, key))
    )
      throw keyTaken(key);
  }

  /** Each agent newly given this identity must have room for it (identities.max_per_agent). */
  private async checkAgentCapacity(
    tenantId: string,
    identityId: string,
    agentIds: string[] | undefined,
  ): Promise<void> {
    if (!agentIds?.length) return;
    const max = this.config.identities.max_per_agent;
    const current = await this.repo.identityIdsOf(tenantId, agentIds);
    const full = agentIds.findIndex((a) => {
      const ids = current.get(a) ?? [];
      return !ids.includes(identityId) && ids.length >= max;
    });
    if (full >= 0)
      throw validationFailed([
        {
          path: `agent_ids[${full}]`,
          message: `the agent has ${max} identities already (identities.max_per_agent)`,
          limit: 'identities.max_per_agent',
        },
      ]);
  }

  private async views(tenantId: string, rows: IdentityEntity[]): Promise<IdentityView[]> {
    const agents = await this.repo.agentIdsOf(
      tenantId,
      rows.map((r) => r.id),
    );
    return rows.map((r) => ({
      id: r.id,
      identifier_key: r.identifier_key,
      name: r.name,
      identity_type: r.identity_type,
      project_id: null,
      agent_ids: agents.get(r.id) ?? [],
      block_ids: [],
      properties: r.properties,
    }));
  }
}

const keyTaken = (key: string) =>
  conflict(
    'IDENTITY_EXISTS',
    `an identity with identifier_key ${JSON.stringify(key)} already exists`,
    {
      identifier_key: key,
    },
  );
