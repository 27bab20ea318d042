import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { EpochMsColumn, JsonColumn } from '../database/columns';
import type { EmbeddingConfig } from '../models/embeddings/embedding-catalog';

/** An archive: a store of passages (Letta's archival memory), used by agents through archive_agents. */
@Entity('archives')
@Index('idx_archives_tenant_created', ['tenant_id', 'created_at'])
export class ArchiveEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 200 })
  name!: string;

  @Column({ type: 'text', nullable: true })
  description!: string | null;

  @JsonColumn({ nullable: true })
  metadata!: Record<string, unknown> | null;

  /** Its passages' embedding model, fixed at creation (null: full-text search only). */
  @JsonColumn({ nullable: true })
  embedding_config!: EmbeddingConfig | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}

/** The archive an agent uses (one per agent, as Letta); `is_owner` for the one made for it. */
@Entity('archive_agents')
@Index('idx_archive_agents_archive', ['archive_id'])
export class ArchiveAgentEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  agent_id!: string;

  @Column({ type: 'varchar', length: 64 })
  archive_id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'boolean', default: false })
  is_owner!: boolean;

  @EpochMsColumn()
  created_at!: number;
}

/**
 * A passage. The full-text index (SQLite FTS5 table `passages_fts`, PostgreSQL column `search`) is kept
 * by the database and read only by ArchivalRepository's raw SQL, so the entity does not name it. A later
 * migration altering this table on SQLite must recreate the FTS triggers (TypeORM rebuilds the table).
 */
@Entity('passages')
@Index('idx_passages_archive_created', ['archive_id', 'created_at', 'id'])
@Index('idx_passages_tenant_created', ['tenant_id', 'created_at'])
export class PassageEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 64 })
  archive_id!: string;

  @Column({ type: 'text' })
  text!: string;

  @JsonColumn()
  tags!: string[];

  @JsonColumn({ nullable: true })
  metadata!: Record<string, unknown> | null;

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;

  /** Not columns: its vector (table passage_embeddings) and its archive's model, read beside it. */
  embedding?: number[] | null;
  embedding_config?: EmbeddingConfig | null;
}

/** A passage's tags, one row each, for tag filters. */
@Entity('passage_tags')
@Index('idx_passage_tags_archive_tag', ['archive_id', 'tag'])
export class PassageTagEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  passage_id!: string;

  @PrimaryColumn({ type: 'varchar', length: 200 })
  tag!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 64 })
  archive_id!: string;
}

export const ARCHIVAL_ENTITIES = [
  ArchiveEntity,
  ArchiveAgentEntity,
  PassageEntity,
  PassageTagEntity,
];
