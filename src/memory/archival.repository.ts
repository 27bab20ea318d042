import { Injectable } from '@nestjs/common';
import type { PageBounds } from '../common/list-page';
import { keysetPage } from '../database/keyset-page';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { searchTerms, type PassageSearch } from '../core/memory/passage-input';
import { storedBytes } from '../core/limits/stored-bytes';
import { sqlTable } from '../database/sql-names';
import type { EmbeddingConfig } from '../models/embeddings/embedding-catalog';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import {
  ArchiveAgentEntity,
  ArchiveEntity,
  PassageEntity,
  PassageTagEntity,
} from './archival.entities';

export interface ArchivePage extends PageBounds {
  name: string | null;
  agentId: string | null;
  order: 'asc' | 'desc';
  after: ArchiveEntity | null;
  before: ArchiveEntity | null;
}

export interface PassagePage {
  /** Only passages matching these words (full text), still in list order. */
  search: string | null;
  limit: number;
  ascending: boolean;
  after: PassageEntity | null;
  before: PassageEntity | null;
}

export interface ScoredPassage {
  passage: PassageEntity;
  score: number;
}

/** Raw SQL with positional parameters, written in textual order (`?` on SQLite, `$n` on PostgreSQL). */
class Sql {
  readonly params: unknown[] = [];
  text = '';
  constructor(private readonly pg: boolean) {}
  p(v: unknown): string {
    this.params.push(v);
    return this.pg ? `$${this.params.length}` : '?';
  }
  list(vs: unknown[]): string {
    return vs.map((v) => this.p(v)).join(', ');
  }
  add(s: string): this {
    this.text += s;
    return this;
  }
}

const COLUMNS =
  'p.id, p.tenant_id, p.archive_id, p.text, p.tags, p.metadata, p.created_at, p.updated_at, e.vector, a.embedding_config';

/** A vector as stored: float32, little-endian (the byte order of every platform Node runs on). */
export const vectorToBytes = (v: readonly number[]): Buffer =>
  Buffer.from(Float32Array.from(v).buffer);

export function bytesToVector(b: Uint8Array): Float32Array {
  // a Float32Array view needs a 4-byte aligned offset; pooled Buffers may not have one
  const aligned = b.byteOffset % 4 === 0 ? b : Uint8Array.from(b);
  return new Float32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4);
}

/** A passage's id with its vector, a candidate of a vector search. */
export interface VectorCandidate {
  id: string;
  created_at: number;
  vector: Float32Array;
}

/**
 * Archives, their agents, passages and their tags; every read is scoped to one tenant. Full-text search
 * runs on the database's own index: FTS5 with bm25 on SQLite, a tsvector with ts_rank on PostgreSQL.
 */
@Injectable()
export class ArchivalRepository {
  private readonly pg: boolean;
  private readonly schema: string | undefined;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
  ) {
    this.pg = ds.options.type === 'postgres';
    this.schema = (ds.options as { schema?: string }).schema;
  }

  // ------------------------------------------------------------ archives

  /** An archive, within the tenant's quota (409 QUOTA_EXCEEDED, nothing written). */
  insertArchive(a: ArchiveEntity): Promise<void> {
    return this.tx.run(async (em) => {
      await em.insert(ArchiveEntity, a as QueryDeepPartialEntity<ArchiveEntity>);
      await this.quotas.assertWithin(em, a.tenant_id, 'archives');
    });
  }

  findArchive(tenantId: string, id: string): Promise<ArchiveEntity | null> {
    return this.ds.getRepository(ArchiveEntity).findOneBy({ tenant_id: tenantId, id });
  }

  async updateArchive(a: ArchiveEntity): Promise<void> {
    await this.ds
      .getRepository(ArchiveEntity)
      .update(
        { tenant_id: a.tenant_id, id: a.id },
        { name: a.name, description: a.description, updated_at: a.updated_at },
      );
  }

  async listArchives(tenantId: string, q: ArchivePage): Promise<ArchiveEntity[]> {
    const qb = this.ds
      .getRepository(ArchiveEntity)
      .createQueryBuilder('a')
      .where('a.tenant_id = :tenantId', { tenantId });
    if (q.name !== null) qb.andWhere('a.name = :name', { name: q.name });
    if (q.agentId !== null) {
      const sub = qb
        .subQuery()
        .select('l.archive_id')
        .from(ArchiveAgentEntity, 'l')
        .where('l.tenant_id = :tenantId')
        .andWhere('l.agent_id = :agentId');
      qb.andWhere(`a.id IN ${sub.getQuery()}`, { agentId: q.agentId });
    }
    return keysetPage(qb, 'a', q, q);
  }

  /** Deletes the archive with its passages and agent links; false when it is not the tenant's. */
  removeArchive(tenantId: string, id: string): Promise<boolean> {
    return this.tx.run(async (em) => {
      const r = await em.delete(ArchiveEntity, { tenant_id: tenantId, id });
      if (!r.affected) return false;
      await this.dropArchiveContents(em, id);
      return true;
    });
  }

  // ------------------------------------------------------------ agents' archives

  /** The archive the agent uses, if any. */
  async archiveOf(tenantId: string, agentId: string): Promise<ArchiveEntity | null> {
    const link = await this.ds
      .getRepository(ArchiveAgentEntity)
      .findOneBy({ tenant_id: tenantId, agent_id: agentId });
    return link ? this.findArchive(tenantId, link.archive_id) : null;
  }

  /** The agent's archive, made (and owned by it) when it has none; a concurrent maker's wins. */
  async archiveFor(
    tenantId: string,
    agentId: string,
    make: () => ArchiveEntity,
  ): Promise<ArchiveEntity> {
    const existing = await this.archiveOf(tenantId, agentId);
    if (existing) return existing;
    try {
      return await this.tx.run(async (em) => {
        const archive = make();
        await em.insert(ArchiveEntity, archive as QueryDeepPartialEntity<ArchiveEntity>);
        await em.insert(ArchiveAgentEntity, {
          agent_id: agentId,
          archive_id: archive.id,
          tenant_id: tenantId,
          is_owner: true,
          created_at: archive.created_at,
        });
        await this.quotas.assertWithin(em, tenantId, 'archives');
        return archive;
      });
    } catch (e) {
      const made = await this.archiveOf(tenantId, agentId);
      if (made) return made;
      throw e;
    }
  }

  /** Links the agent to the archive; throws a unique violation when it uses another one. */
  async link(tenantId: string, agentId: string, archiveId: string, at: number): Promise<void> {
    await this.ds.getRepository(ArchiveAgentEntity).insert({
      agent_id: agentId,
      archive_id: archiveId,
      tenant_id: tenantId,
      is_owner: false,
      created_at: at,
    });
  }

  async unlink(tenantId: string, agentId: string, archiveId: string): Promise<void> {
    await this.ds
      .getRepository(ArchiveAgentEntity)
      .delete({ tenant_id: tenantId, agent_id: agentId, archive_id: archiveId });
  }

  /** The agent is deleted: its link goes, and the archive made for it when no other agent uses it. */
  async dropAgent(tenantId: string, agentId: string): Promise<void> {
    await this.tx.run(async (em) => {
      const link = await em.findOneBy(ArchiveAgentEntity, {
        tenant_id: tenantId,
        agent_id: agentId,
      });
      if (!link) return;
      await em.delete(ArchiveAgentEntity, { agent_id: agentId });
      if (!link.is_owner) return;
      if (await em.countBy(ArchiveAgentEntity, { archive_id: link.archive_id })) return;
      await em.delete(ArchiveEntity, { id: link.archive_id });
      await this.dropArchiveContents(em, link.archive_id);
    });
  }

  // ------------------------------------------------------------ passages

  /**
   * Stores passages with their tag rows and, when embedded, their vectors (`vectors[i]` of `rows[i]`,
   * made by `handle`), in one transaction: all of it or nothing, within the tenant's quota (409
   * QUOTA_EXCEEDED).
   */
  insertPassages(
    rows: PassageEntity[],
    embedded: { handle: string; vectors: number[][] } | null = null,
  ): Promise<void> {
    return this.tx.run(async (em) => {
      for (const [i, p] of rows.entries()) {
        await em.insert(PassageEntity, p as QueryDeepPartialEntity<PassageEntity>);
        if (embedded) {
          const sql = new Sql(this.pg);
          sql.add(
            `INSERT INTO ${this.table('passage_embeddings')} (passage_id, tenant_id, archive_id, handle, vector) VALUES (${sql.list([p.id, p.tenant_id, p.archive_id, embedded.handle, vectorToBytes(embedded.vectors[i])])})`,
          );
          await em.query(sql.text, sql.params);
        }
        if (p.tags.length)
          await em.insert(
            PassageTagEntity,
            p.tags.map((tag) => ({
              passage_id: p.id,
              tag,
              tenant_id: p.tenant_id,
              archive_id: p.archive_id,
            })),
          );
      }
      if (rows.length) {
        await this.quotas.assertWithin(em, rows[0].tenant_id, 'passages', rows.length);
        const bytes = rows.reduce((n, p) => n + storedBytes('passages', p), 0);
        await this.quotas.assertBytesWithin(em, rows[0].tenant_id, bytes);
      }
    });
  }

  findPassage(tenantId: string, id: string): Promise<PassageEntity | null> {
    return this.ds.getRepository(PassageEntity).findOneBy({ tenant_id: tenantId, id });
  }

  /** Deletes a passage of the archive; false when there is none. */
  removePassage(tenantId: string, archiveId: string, id: string): Promise<boolean> {
    return this.tx.run(async (em) => {
      const r = await em.delete(PassageEntity, { tenant_id: tenantId, archive_id: archiveId, id });
      if (!r.affected) return false;
      await em.delete(PassageTagEntity, { passage_id: id });
      await this.deleteVectors(em, 'passage_id', id);
      return true;
    });
  }

  /** A page of an archive's passages by (created_at, id); `search` keeps only full-text matches. */
  async listPassages(
    tenantId: string,
    archiveId: string,
    q: PassagePage,
  ): Promise<PassageEntity[]> {
    const terms = q.search === null ? null : searchTerms(q.search);
    if (terms !== null && terms.length === 0) return [];
    const sql = new Sql(this.pg).add(
      `SELECT ${COLUMNS} FROM ${this.table('passages')} p ${this.joins()} WHERE `,
    );
    sql.add(`p.tenant_id = ${sql.p(tenantId)} AND p.archive_id = ${sql.p(archiveId)}`);
    if (terms) sql.add(` AND ${this.matches(sql, terms)}`);
    const beyond = (c: PassageEntity, forward: boolean) => {
      const op = forward === q.ascending ? '>' : '<';
      sql.add(
        ` AND (p.created_at ${op} ${sql.p(c.created_at)} OR (p.created_at = ${sql.p(c.created_at)} AND p.id ${op} ${sql.p(c.id)}))`,
      );
    };
    if (q.after) beyond(q.after, true);
    if (q.before) beyond(q.before, false);
    const reverse = q.before !== null && q.after === null;
    const dir = q.ascending !== reverse ? 'ASC' : 'DESC';
    sql.add(` ORDER BY p.created_at ${dir}, p.id ${dir} LIMIT ${sql.p(q.limit)}`);
    const rows = (await this.ds.query<Record<string, unknown>[]>(sql.text, sql.params)).map(
      toPassage,
    );
    return reverse ? rows.reverse() : rows;
  }

  /**
   * Passages of the tenant (of `archiveIds` when given) matching the search, best first: ranked by the
   * full-text score when there are words to match, else newest first with score 0.
   */
  async search(
    tenantId: string,
    archiveIds: string[] | null,
    s: PassageSearch,
  ): Promise<ScoredPassage[]> {
    if (archiveIds !== null && archiveIds.length === 0) return [];
    const terms = s.query === null ? [] : searchTerms(s.query);
    if (s.query !== null && terms.length === 0) return [];
    const sql = new Sql(this.pg);
    const ranked = terms.length > 0;
    const passages = `${this.table('passages')} p ${this.joins()}`;
    if (!ranked) sql.add(`SELECT ${COLUMNS}, 0 AS score FROM ${passages} WHERE `);
    else if (this.pg) {
      const tsq = `to_tsquery('english', ${sql.p(terms.join(' | '))})`;
      sql.add(`SELECT ${COLUMNS}, ts_rank(p.search, ${tsq}) AS score FROM ${passages}`);
      sql.add(` WHERE p.search @@ ${tsq} AND `);
    } else {
      sql.add(
        `SELECT ${COLUMNS}, -bm25(passages_fts) AS score FROM passages_fts JOIN passages p ON p.seq = passages_fts.rowid ${this.joins()}`,
      );
      sql.add(` WHERE passages_fts MATCH ${sql.p(ftsQuery(terms))} AND `);
    }
    this.filters(sql, tenantId, archiveIds, s);
    sql.add(
      ` ORDER BY ${ranked ? 'score DESC, ' : ''}p.created_at DESC, p.id DESC LIMIT ${sql.p(s.limit)}`,
    );
    const rows = await this.ds.query<Record<string, unknown>[]>(sql.text, sql.params);
    return rows.map((r) => ({ passage: toPassage(r), score: Number(r.score) }));
  }

  /**
   * A page of vector-search candidates: ids and vectors of the newest `max` passages embedded by
   * `handle` that pass the search's filters (archives, tags, dates), older than `before` when given.
   * Only these columns are read; `passagesByIds` reads the few that rank.
   */
  async vectorCandidates(
    tenantId: string,
    archiveIds: string[] | null,
    s: PassageSearch,
    handle: string,
    max: number,
    before: VectorCandidate | null,
  ): Promise<VectorCandidate[]> {
    if (archiveIds !== null && archiveIds.length === 0) return [];
    const sql = new Sql(this.pg);
    sql.add(
      `SELECT p.id, p.created_at, e.vector FROM ${this.table('passages')} p JOIN ${this.table('passage_embeddings')} e ON e.passage_id = p.id WHERE e.handle = ${sql.p(handle)} AND `,
    );
    this.filters(sql, tenantId, archiveIds, s);
    if (before)
      sql.add(` AND (p.created_at, p.id) < (${sql.p(before.created_at)}, ${sql.p(before.id)})`);
    sql.add(` ORDER BY p.created_at DESC, p.id DESC LIMIT ${sql.p(max)}`);
    const rows = await this.ds.query<{ id: string; created_at: unknown; vector: Uint8Array }[]>(
      sql.text,
      sql.params,
    );
    return rows.map((r) => ({
      id: r.id,
      created_at: Number(r.created_at),
      vector: bytesToVector(r.vector),
    }));
  }

  /** The tenant's passages of these ids (any order; ids not found are left out). */
  async passagesByIds(tenantId: string, ids: string[]): Promise<PassageEntity[]> {
    if (ids.length === 0) return [];
    const sql = new Sql(this.pg);
    sql.add(
      `SELECT ${COLUMNS} FROM ${this.table('passages')} p ${this.joins()} WHERE p.tenant_id = ${sql.p(tenantId)} AND p.id IN (${sql.list(ids)})`,
    );
    return (await this.ds.query<Record<string, unknown>[]>(sql.text, sql.params)).map(toPassage);
  }

  /** The embedding models of the tenant's archives (of `archiveIds` when given), distinct; null: an archive without one. */
  async embeddingHandles(
    tenantId: string,
    archiveIds: string[] | null,
  ): Promise<(string | null)[]> {
    if (archiveIds !== null && archiveIds.length === 0) return [];
    const qb = this.ds
      .getRepository(ArchiveEntity)
      .createQueryBuilder('a')
      .select('a.embedding_config', 'embedding_config')
      .distinct(true)
      .where('a.tenant_id = :tenantId', { tenantId });
    if (archiveIds !== null) qb.andWhere('a.id IN (:...archiveIds)', { archiveIds });
    const rows = await qb.getRawMany<{ embedding_config: string | null }>();
    const handles = rows.map((r) =>
      r.embedding_config === null
        ? null
        : (JSON.parse(r.embedding_config) as { handle: string }).handle,
    );
    return [...new Set(handles)];
  }

  /** The conditions every search shares: tenant, archives, tags, dates. */
  private filters(sql: Sql, tenantId: string, archiveIds: string[] | null, s: PassageSearch) {
    sql.add(`p.tenant_id = ${sql.p(tenantId)}`);
    if (archiveIds !== null) sql.add(` AND p.archive_id IN (${sql.list(archiveIds)})`);
    if (s.tags.length) {
      sql.add(
        ` AND p.id IN (SELECT t.passage_id FROM ${this.table('passage_tags')} t WHERE t.tenant_id = ${sql.p(tenantId)} AND t.tag IN (${sql.list(s.tags)})`,
      );
      sql.add(
        s.tagMatch === 'all'
          ? ` GROUP BY t.passage_id HAVING COUNT(DISTINCT t.tag) = ${sql.p(s.tags.length)})`
          : ')',
      );
    }
    if (s.start !== null) sql.add(` AND p.created_at >= ${sql.p(s.start)}`);
    if (s.end !== null) sql.add(` AND p.created_at <= ${sql.p(s.end)}`);
  }

  /** A passage's vector and its archive's embedding model, read beside it. */
  private joins(): string {
    return `LEFT JOIN ${this.table('passage_embeddings')} e ON e.passage_id = p.id LEFT JOIN ${this.table('archives')} a ON a.id = p.archive_id`;
  }

  private matches(sql: Sql, terms: string[]): string {
    if (this.pg) return `p.search @@ to_tsquery('english', ${sql.p(terms.join(' | '))})`;
    return `p.seq IN (SELECT rowid FROM passages_fts WHERE passages_fts MATCH ${sql.p(ftsQuery(terms))})`;
  }

  private table(name: string): string {
    return sqlTable(this.schema, name);
  }

  private async deleteVectors(
    em: EntityManager,
    key: 'passage_id' | 'archive_id',
    id: string,
  ): Promise<void> {
    const sql = new Sql(this.pg);
    sql.add(`DELETE FROM ${this.table('passage_embeddings')} WHERE ${key} = ${sql.p(id)}`);
    await em.query(sql.text, sql.params);
  }

  private async dropArchiveContents(em: EntityManager, archiveId: string): Promise<void> {
    await this.deleteVectors(em, 'archive_id', archiveId);
    await em.delete(PassageTagEntity, { archive_id: archiveId });
    await em.delete(PassageEntity, { archive_id: archiveId });
    await em.delete(ArchiveAgentEntity, { archive_id: archiveId });
  }
}

/** FTS5 query of any of the words, each quoted (they hold only letters and digits). */
const ftsQuery = (terms: string[]) => terms.map((t) => `"${t}"`).join(' OR ');

function toPassage(r: Record<string, unknown>): PassageEntity {
  const json = (v: unknown) => (typeof v === 'string' ? (JSON.parse(v) as unknown) : null);
  return Object.assign(new PassageEntity(), {
    id: r.id as string,
    tenant_id: r.tenant_id as string,
    archive_id: r.archive_id as string,
    text: r.text as string,
    tags: (json(r.tags) as string[] | null) ?? [],
    metadata: json(r.metadata) as Record<string, unknown> | null,
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    embedding: r.vector == null ? null : Array.from(bytesToVector(r.vector as Uint8Array)),
    embedding_config: json(r.embedding_config) as EmbeddingConfig | null,
  });
}
