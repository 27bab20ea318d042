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
import { fitPage, takenBack } from '../common/list-page';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { readLimit } from '../core/limits';
import { storedBytes } from '../core/limits/stored-bytes';
import {
  parsePassageBatch,
  parsePassageInput,
  parsePassageSearch,
  type PassageInput,
  type PassageSearch,
} from '../core/memory/passage-input';
import type { Clock, IdGenerator } from '../core/ports';
import { ScanSlots } from '../database/scan-slots';
import { isUniqueViolation } from '../database/unique-violation';
import { ArchiveEntity, PassageEntity } from './archival.entities';
import { cosine, reciprocalRankFusion, topByScore } from '../core/memory/vectors';
import type { EmbeddingConfig } from '../models/embeddings/embedding-catalog';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { EmbeddingsService } from '../models/embeddings/embeddings.service';
import { ArchivalRepository, ScoredPassage, type VectorCandidate } from './archival.repository';

const NAME_MAX = 200;
const DESCRIPTION_MAX = 10_000;
/** Vectors read per query of a vector search's scan. */
const SCAN_PAGE = 500;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const one = (v: unknown): unknown => (Array.isArray(v) ? v[v.length - 1] : v);

/**
 * Letta's archival memory: archives of passages, one archive per agent (made for it at its first
 * insert, or attached). An archive may have an embedding model (fixed at creation): its passages are
 * embedded on insert (before anything is written) and searched by vector, full text, or both fused
 * (docs/memory.md). Every read is the tenant's own.
 */
@Injectable()
export class ArchivalService {
  constructor(
    private readonly repo: ArchivalRepository,
    private readonly agents: AgentsService,
    private readonly embeddings: EmbeddingsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly quotas: TenantQuotas,
    private readonly scans: ScanSlots,
  ) {}

  // ------------------------------------------------------------ an agent's archival memory

  /** Inserts into the agent's archive (made for it on first use); Letta answers a list. */
  async insert(tenantId: string, agentId: string, body: unknown): Promise<PassageEntity[]> {
    const { input, problems } = parsePassageInput(body, this.config.limits);
    if (!input) throw validationFailed(problems, 'passage is invalid');
    return [await this.insertForAgent(tenantId, agentId, input)];
  }

  /**
   * The tool's insert (arguments already validated by their schema, bounds checked here) and the agent
   * route's. The text is embedded first, so a failing provider leaves nothing written, not even the
   * archive the first insert makes.
   */
  async insertForAgent(
    tenantId: string,
    agentId: string,
    input: PassageInput,
  ): Promise<PassageEntity> {
    const agent = await this.agents.getForTenant(tenantId, agentId);
    const existing = await this.repo.archiveOf(tenantId, agentId);
    const embeddingConfig = existing
      ? existing.embedding_config
      : (agent.embedding_config ?? this.defaultEmbedding());
    await this.assertRoom(tenantId, [input]);
    const vectors = await this.embed(embeddingConfig, [input]);
    const archive =
      existing ??
      (await this.repo.archiveFor(tenantId, agentId, () =>
        this.newArchive(tenantId, {
          name: `${agent.name}'s Archive`.slice(0, NAME_MAX),
          description: 'Default archive created automatically',
          embedding_config: embeddingConfig,
        }),
      ));
    // a concurrent first insert made the archive with another model: embed again with its own
    const [row] =
      archive.embedding_config?.handle === embeddingConfig?.handle
        ? await this.store(tenantId, archive, [input], vectors)
        : await this.store(tenantId, archive, [input]);
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
    const archive = await this.agentArchive(tenantId, agentId);
    if (!archive) return [];
    const cursor = async (key: 'after' | 'before') => {
      const id = one(raw[key]);
      if (id === undefined || id === '') return null;
      const found = isPrefixedId('passage', id) ? await this.repo.findPassage(tenantId, id) : null;
      if (!found) throw badRequest('UNKNOWN_CURSOR', `${key} is not a passage id`);
      return found;
    };
    const page = {
      search: typeof search === 'string' && search !== '' ? search : null,
      limit,
      ascending: ascending !== 'false',
      after: await cursor('after'),
      before: await cursor('before'),
    };
    // read whole: at most limits.max_search_results passages of limits.max_passage_chars
    const rows = await this.repo.listPassages(tenantId, archive.id, page);
    return fitPage(rows, this.config.limits.max_page_bytes, takenBack(page));
  }

  async remove(tenantId: string, agentId: string, passageId: string): Promise<void> {
    assertPrefixedId('passage', 'passage', passageId);
    const archive = await this.agentArchive(tenantId, agentId);
    if (!archive || !(await this.repo.removePassage(tenantId, archive.id, passageId)))
      throw notFound('passage', passageId);
  }

  /** The agent route's search (and the tool's): ranked results in Letta's `{count, results}` shape. */
  async searchAgent(tenantId: string, agentId: string, raw: Obj): Promise<ScoredPassage[]> {
    const search = this.parseSearch(raw, 10);
    await this.agents.getForTenant(tenantId, agentId);
    const archive = await this.repo.archiveOf(tenantId, agentId);
    return archive ? this.rank(tenantId, [archive.id], search) : [];
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
    return this.rank(tenantId, archiveIds, search);
  }

  /**
   * Full text, vector, or both fused (reciprocal rank fusion). No mode asked: vector when every searched
   * archive has an embedding model, hybrid when only some have (the others are still found by words),
   * full text when none has. Vector search compares the query with the newest
   * `models.embeddings.max_scan_passages` passages per embedding model that pass the filters; archives
   * of several models are ranked per model and fused.
   */
  private async rank(
    tenantId: string,
    archiveIds: string[] | null,
    s: PassageSearch,
  ): Promise<ScoredPassage[]> {
    const models =
      s.mode === 'fts' || s.query === null
        ? []
        : await this.repo.embeddingHandles(tenantId, archiveIds);
    const handles = models.filter((h): h is string => h !== null).sort();
    if (s.mode !== null && s.mode !== 'fts' && s.query !== null && handles.length === 0)
      throw badRequest(
        'VECTOR_SEARCH_UNAVAILABLE',
        this.embeddings.enabled
          ? `search_mode ${s.mode} needs an archive with an embedding model; the searched archives have none (search_mode fts searches them)`
          : `search_mode ${s.mode} needs an embedding model, and none is configured (models.embeddings); search_mode fts searches by full text`,
      );
    if (handles.length === 0) return this.repo.search(tenantId, archiveIds, s);
    const mode = s.mode ?? (models.includes(null) ? 'hybrid' : 'vector');
    const perModel: { id: string; score: number }[][] = [];
    for (const handle of handles) {
      const [query] = await this.embeddings.embed(handle, [s.query!]);
      // the scan, not the provider's answer, in a scan slot: it reads up to max_scan_passages vectors
      perModel.push(
        await this.scans.run(tenantId, () => this.nearest(tenantId, archiveIds, s, handle, query)),
      );
    }
    const fts =
      mode === 'hybrid'
        ? (await this.repo.search(tenantId, archiveIds, s)).map((x) => ({
            id: x.passage.id,
            score: x.score,
          }))
        : null;
    const lists = fts ? [fts, ...perModel] : perModel;
    const ranked =
      lists.length === 1
        ? lists[0]
        : reciprocalRankFusion(lists.map((l) => l.map((x) => x.id))).slice(0, s.limit);
    const found = await this.repo.passagesByIds(
      tenantId,
      ranked.map((r) => r.id),
    );
    const byId = new Map(found.map((p) => [p.id, p]));
    // a passage deleted between the scan and the read is left out
    return ranked.flatMap((r) => {
      const passage = byId.get(r.id);
      return passage ? [{ passage, score: r.score }] : [];
    });
  }

  /**
   * The `s.limit` passages of `handle` nearest to `query` by cosine, over the newest `max_scan_passages`,
   * read in pages so the event loop breathes between them and only one page of vectors is held.
   */
  private async nearest(
    tenantId: string,
    archiveIds: string[] | null,
    s: PassageSearch,
    handle: string,
    query: number[],
  ): Promise<{ id: string; score: number }[]> {
    const max = this.config.models.embeddings.max_scan_passages;
    let best: { id: string; score: number }[] = [];
    let last: VectorCandidate | null = null;
    for (let seen = 0; seen < max;) {
      const size = Math.min(SCAN_PAGE, max - seen);
      const page = await this.repo.vectorCandidates(tenantId, archiveIds, s, handle, size, last);
      const scored = page.map((c) => ({ id: c.id, score: cosine(query, c.vector) }));
      best = topByScore([...best, ...scored], (x) => x.score, s.limit);
      seen += page.length;
      if (page.length < size) break;
      last = page[page.length - 1];
    }
    return best;
  }

  // ------------------------------------------------------------ archives

  /** Letta's `embedding` / `embedding_config` pick its embedding model (else the operator's default). */
  async createArchive(tenantId: string, body: unknown): Promise<ArchiveEntity> {
    const fields = this.archiveFields(body, true);
    const chosen = this.embeddings.choose(body as Obj);
    if ('error' in chosen)
      throw validationFailed([{ path: chosen.path, message: chosen.error }], 'archive is invalid');
    const row = this.newArchive(tenantId, {
      name: fields.name!,
      description: fields.description ?? null,
      embedding_config: chosen.ok,
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
      maxBytes: this.config.limits.max_page_bytes,
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
    return this.store(tenantId, archive, inputs);
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

  private async agentArchive(tenantId: string, agentId: string): Promise<ArchiveEntity | null> {
    await this.agents.getForTenant(tenantId, agentId);
    return this.repo.archiveOf(tenantId, agentId);
  }

  private newArchive(
    tenantId: string,
    f: Pick<ArchiveEntity, 'name' | 'description' | 'embedding_config'>,
  ): ArchiveEntity {
    const now = this.clock.now();
    return Object.assign(new ArchiveEntity(), {
      id: this.ids.prefixed('archive'),
      tenant_id: tenantId,
      metadata: null,
      created_at: now,
      updated_at: now,
      ...f,
    });
  }

  private defaultEmbedding(): EmbeddingConfig | null {
    const chosen = this.embeddings.choose({});
    return 'ok' in chosen ? chosen.ok : null;
  }

  /** The inputs' vectors by the archive's model (none: null); called before anything is written. */
  private async embed(
    config: EmbeddingConfig | null,
    inputs: PassageInput[],
  ): Promise<number[][] | null> {
    return config
      ? this.embeddings.embed(
          config.handle,
          inputs.map((i) => i.text),
        )
      : null;
  }

  /** 409 QUOTA_EXCEEDED before the embedding model is called for passages that could not be stored. */
  private async assertRoom(tenantId: string, inputs: PassageInput[]): Promise<void> {
    await this.quotas.assertRoom(tenantId, 'passages', inputs.length);
    const bytes = inputs.reduce((n, i) => n + storedBytes('passages', i), 0);
    await this.quotas.assertBytesRoom(tenantId, bytes);
  }

  /** Embeds (unless `vectors` are given), then writes the passages with their vectors at once. */
  private async store(
    tenantId: string,
    archive: ArchiveEntity,
    inputs: PassageInput[],
    vectors?: number[][] | null,
  ): Promise<PassageEntity[]> {
    const config = archive.embedding_config;
    // before the embedding model is called for passages that would not be stored
    if (!vectors) await this.assertRoom(tenantId, inputs);
    const embedded = vectors ?? (await this.embed(config, inputs));
    const now = this.clock.now();
    const rows = inputs.map((i, n) =>
      Object.assign(new PassageEntity(), {
        id: this.ids.prefixed('passage'),
        tenant_id: tenantId,
        archive_id: archive.id,
        text: i.text,
        tags: i.tags,
        metadata: i.metadata,
        created_at: i.createdAt ?? now,
        updated_at: now,
        embedding: embedded?.[n] ?? null,
        embedding_config: config,
      }),
    );
    await this.repo.insertPassages(
      rows,
      config && embedded ? { handle: config.handle, vectors: embedded } : null,
    );
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
    // an update, as Letta's, sets only what is given not null: null keeps the description
    if (body.description !== undefined && !(body.description === null && !create)) {
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
