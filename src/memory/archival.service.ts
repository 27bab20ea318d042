import { Inject, Injectable } from '@nestjs/common';
import { AgentsService } from '../agents/agents.service';
import { CLOCK } from '../common/clock';
import {
  badRequest,
  conflict,
  notFound,
  validationFailed,
  type ValidationProblem,
} from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR, isPrefixedId } from '../common/ids';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { readLimit } from '../core/limits';
import {
  parsePassageBatch,
  parsePassageInput,
  parsePassageSearch,
  type PassageInput,
  type PassageSearch,
} from '../core/memory/passage-input';
import type { Clock, IdGenerator } from '../core/ports';
import { isUniqueViolation } from '../database/unique-violation';
import { ArchiveEntity, PassageEntity } from './archival.entities';
import { ArchivalRepository, ScoredPassage } from './archival.repository';

const NAME_MAX = 200;
const DESCRIPTION_MAX = 10_000;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const one = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);

/**
 * Letta's archival memory: archives of passages, one archive per agent (made for it at its first
 * insert, or attached), searched by full text (no embedding provider is configurable, so vector search
 * is full-text search too). Every read is the tenant's own.
 */
@Injectable()
export class ArchivalService {
  constructor(
    private readonly repo: ArchivalRepository,
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
  ) {}

  // ------------------------------------------------------------ an agent's archival memory

  /** Inserts into the agent's archive (made for it on first use); Letta answers a list. */
  async insert(tenantId: string, agentId: string, body: unknown): Promise<PassageEntity[]> {
    const { input, problems } = parsePassageInput(body, this.config.limits);
    if (!input) throw validationFailed(problems, 'passage is invalid');
    return [await this.insertForAgent(tenantId, agentId, input)];
  }

  /** The tool's insert: arguments already validated by their schema, bounds checked here. */
  async insertForAgent(
    tenantId: string,
    agentId: string,
    input: PassageInput,
  ): Promise<PassageEntity> {
    const archive = await this.agentArchive(tenantId, agentId, true);
    const [row] = await this.store(tenantId, archive!.id, [input]);
    return row;
  }

  async list(tenantId: string, agentId: string, raw: Obj): Promise<PassageEntity[]> {
    const problems: ValidationProblem[] = nulBytePaths(raw);
    const limit = readLimit(raw.limit, 100, 'max_search_results', this.config.limits, problems);
    const search = one(raw.search);
    if (search !== undefined && (typeof search !== 'string' || search.length > 10_000))
      problems.push({ path: 'search', message: 'must be a text of at most 10000 characters' });
    const ascending = one(raw.ascending);
    if (ascending !== undefined && ascending !== 'true' && ascending !== 'false')
      problems.push({ path: 'ascending', message: 'must be true or false' });
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const archive = await this.agentArchive(tenantId, agentId, false);
    if (!archive) return [];
    const cursor = async (key: 'after' | 'before') => {
      const id = one(raw[key]);
      if (id === undefined || id === '') return null;
      const found = isPrefixedId('passage', id) ? await this.repo.findPassage(tenantId, id) : null;
      if (!found) throw badRequest('UNKNOWN_CURSOR', `${key} is not a passage id`);
      return found;
    };
    return this.repo.listPassages(tenantId, archive.id, {
      search: typeof search === 'string' && search !== '' ? search : null,
      limit,
      ascending: ascending !== 'false',
      after: await cursor('after'),
      before: await cursor('before'),
    });
  }

  async remove(tenantId: string, agentId: string, passageId: string): Promise<void> {
    assertPrefixedId('passage', 'passage', passageId);
    const archive = await this.agentArchive(tenantId, agentId, false);
    if (!archive || !(await this.repo.removePassage(tenantId, archive.id, passageId)))
      throw notFound('passage', passageId);
  }

  /** The agent route's search (and the tool's): ranked results in Letta's `{count, results}` shape. */
  async searchAgent(tenantId: string, agentId: string, raw: Obj): Promise<ScoredPassage[]> {
    const search = this.parseSearch(raw, 10);
    await this.agents.getForTenant(tenantId, agentId);
    const archive = await this.repo.archiveOf(tenantId, agentId);
    return archive ? this.repo.search(tenantId, [archive.id], search) : [];
  }

  /** `POST /v1/passages/search`: the agent's archive, one archive, or all the tenant's passages. */
  async search(tenantId: string, body: unknown): Promise<ScoredPassage[]> {
    const b = isObj(body) ? body : {};
    const search = this.parseSearch(b, 50);
    let archiveIds: string[] | null = null;
    if (b.agent_id !== undefined && b.agent_id !== null) {
      if (typeof b.agent_id !== 'string')
        throw validationFailed([{ path: 'agent_id', message: 'must be an agent id' }]);
      await this.agents.getForTenant(tenantId, b.agent_id);
      const archive = await this.repo.archiveOf(tenantId, b.agent_id);
      archiveIds = archive ? [archive.id] : [];
    } else if (b.archive_id !== undefined && b.archive_id !== null) {
      if (typeof b.archive_id !== 'string')
        throw validationFailed([{ path: 'archive_id', message: 'must be an archive id' }]);
      archiveIds = [(await this.getArchive(tenantId, b.archive_id)).id];
    }
    return this.repo.search(tenantId, archiveIds, search);
  }

  // ------------------------------------------------------------ archives

  async createArchive(tenantId: string, body: unknown): Promise<ArchiveEntity> {
    const fields = this.archiveFields(body, true);
    const now = this.clock.now();
    const row = Object.assign(new ArchiveEntity(), {
      id: this.ids.prefixed('archive'),
      tenant_id: tenantId,
      name: fields.name!,
      description: fields.description ?? null,
      metadata: null,
      created_at: now,
      updated_at: now,
    });
    await this.repo.insertArchive(row);
    return row;
  }

  async getArchive(tenantId: string, id: string): Promise<ArchiveEntity> {
    const row = isPrefixedId('archive', id) ? await this.repo.findArchive(tenantId, id) : null;
    if (!row) throw notFound('archive', id.slice(0, 200));
    return row;
  }

  async listArchives(tenantId: string, raw: Obj): Promise<ArchiveEntity[]> {
    const problems: ValidationProblem[] = nulBytePaths(raw);
    const limit = readLimit(raw.limit, 50, 'max_page_size', this.config.limits, problems);
    const order = one(raw.order) ?? 'desc';
    if (order !== 'asc' && order !== 'desc')
      problems.push({ path: 'order', message: 'must be "asc" or "desc"' });
    const name = one(raw.name);
    if (name !== undefined && (typeof name !== 'string' || name.length > NAME_MAX))
      problems.push({ path: 'name', message: `must be a text of at most ${NAME_MAX} characters` });
    const agentId = one(raw.agent_id);
    if (agentId !== undefined && typeof agentId !== 'string')
      problems.push({ path: 'agent_id', message: 'must be an agent id' });
    if (problems.length) throw validationFailed(problems, 'query is invalid');
    const cursor = async (key: 'after' | 'before') => {
      const id = one(raw[key]);
      if (id === undefined || id === '') return null;
      const found = isPrefixedId('archive', id) ? await this.repo.findArchive(tenantId, id) : null;
      if (!found) throw badRequest('UNKNOWN_CURSOR', `${key} is not an archive id`);
      return found;
    };
    return this.repo.listArchives(tenantId, {
      name: typeof name === 'string' ? name : null,
      agentId: typeof agentId === 'string' && agentId !== '' ? agentId : null,
      limit,
      order: order as 'asc' | 'desc',
      after: await cursor('after'),
      before: await cursor('before'),
    });
  }

  async updateArchive(tenantId: string, id: string, body: unknown): Promise<ArchiveEntity> {
    const row = await this.getArchive(tenantId, id);
    const fields = this.archiveFields(body, false);
    if (fields.name !== undefined) row.name = fields.name;
    if (fields.description !== undefined) row.description = fields.description;
    row.updated_at = this.clock.now();
    await this.repo.updateArchive(row);
    return row;
  }

  async removeArchive(tenantId: string, id: string): Promise<void> {
    await this.getArchive(tenantId, id);
    await this.repo.removeArchive(tenantId, id);
  }

  async addPassages(tenantId: string, archiveId: string, body: unknown, many: boolean) {
    const archive = await this.getArchive(tenantId, archiveId);
    const { inputs, problems } = many
      ? parsePassageBatch(body, this.config.limits)
      : (({ input, problems: p }) => ({ inputs: input ? [input] : [], problems: p }))(
          parsePassageInput(body, this.config.limits),
        );
    if (problems.length) throw validationFailed(problems, 'passage is invalid');
    return this.store(tenantId, archive.id, inputs);
  }

  async removeArchivePassage(
    tenantId: string,
    archiveId: string,
    passageId: string,
  ): Promise<void> {
    await this.getArchive(tenantId, archiveId);
    assertPrefixedId('passage', 'passage', passageId);
    if (!(await this.repo.removePassage(tenantId, archiveId, passageId)))
      throw notFound('passage', passageId);
  }

  /** Letta's `agents.archives.attach`: an agent uses one archive (another one attached is 409). */
  async attach(tenantId: string, agentId: string, archiveId: string): Promise<void> {
    await this.agents.getForTenant(tenantId, agentId);
    const archive = await this.getArchive(tenantId, archiveId);
    const current = await this.repo.archiveOf(tenantId, agentId);
    if (current?.id === archive.id) return;
    if (current)
      throw conflict(
        'AGENT_HAS_ARCHIVE',
        `the agent uses archive ${current.id}; detach it first (one archive per agent)`,
        { archive_id: current.id },
      );
    try {
      await this.repo.link(tenantId, agentId, archive.id, this.clock.now());
    } catch (e) {
      if (!isUniqueViolation(e)) throw e;
      throw conflict('AGENT_HAS_ARCHIVE', 'the agent uses another archive (one archive per agent)');
    }
  }

  async detach(tenantId: string, agentId: string, archiveId: string): Promise<void> {
    await this.agents.getForTenant(tenantId, agentId);
    await this.getArchive(tenantId, archiveId);
    await this.repo.unlink(tenantId, agentId, archiveId);
  }

  /** The agent is being deleted: its link goes, and the archive made for it if no other agent uses it. */
  dropAgent(tenantId: string, agentId: string): Promise<void> {
    return this.repo.dropAgent(tenantId, agentId);
  }

  // ------------------------------------------------------------ internals

  private parseSearch(raw: Obj, defaultLimit: number): PassageSearch {
    const { search, problems } = parsePassageSearch(raw, this.config.limits, defaultLimit);
    problems.push(...nulBytePaths(raw));
    if (!search || problems.length) throw validationFailed(problems, 'search is invalid');
    return search;
  }

  private async agentArchive(
    tenantId: string,
    agentId: string,
    create: boolean,
  ): Promise<ArchiveEntity | null> {
    const agent = await this.agents.getForTenant(tenantId, agentId);
    if (!create) return this.repo.archiveOf(tenantId, agentId);
    return this.repo.archiveFor(tenantId, agentId, () => {
      const now = this.clock.now();
      return Object.assign(new ArchiveEntity(), {
        id: this.ids.prefixed('archive'),
        tenant_id: tenantId,
        name: `${agent.name}'s Archive`.slice(0, NAME_MAX),
        description: 'Default archive created automatically',
        metadata: null,
        created_at: now,
        updated_at: now,
      });
    });
  }

  private async store(
    tenantId: string,
    archiveId: string,
    inputs: PassageInput[],
  ): Promise<PassageEntity[]> {
    const now = this.clock.now();
    const rows = inputs.map((i) =>
      Object.assign(new PassageEntity(), {
        id: this.ids.prefixed('passage'),
        tenant_id: tenantId,
        archive_id: archiveId,
        text: i.text,
        tags: i.tags,
        metadata: i.metadata,
        created_at: i.createdAt ?? now,
        updated_at: now,
      }),
    );
    await this.repo.insertPassages(rows);
    return rows;
  }

  private archiveFields(
    body: unknown,
    create: boolean,
  ): { name?: string; description?: string | null } {
    const problems: ValidationProblem[] = nulBytePaths(body);
    if (!isObj(body)) throw validationFailed([{ path: '$', message: 'must be an object' }]);
    const out: { name?: string; description?: string | null } = {};
    if (body.name !== undefined && body.name !== null) {
      if (typeof body.name === 'string' && body.name.trim() !== '' && body.name.length <= NAME_MAX)
        out.name = body.name;
      else
        problems.push({
          path: 'name',
          message: `must be a non-empty string of at most ${NAME_MAX} characters`,
        });
    } else if (create) problems.push({ path: 'name', message: 'is required' });
    if (body.description !== undefined) {
      if (
        body.description === null ||
        (typeof body.description === 'string' && body.description.length <= DESCRIPTION_MAX)
      )
        out.description = body.description;
      else
        problems.push({
          path: 'description',
          message: `must be a string of at most ${DESCRIPTION_MAX} characters, or null`,
        });
    }
    if (problems.length) throw validationFailed(problems, 'archive is invalid');
    return out;
  }
}
