import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Archival memory (src/memory): archives, which agent uses which (one archive per agent, as Letta),
 * passages with their tags, and a full-text index of the passages' text kept in sync by the database:
 * on SQLite an FTS5 table fed by triggers (keyed by `seq`, an INTEGER PRIMARY KEY, so VACUUM cannot
 * renumber it), on PostgreSQL a generated tsvector column with a GIN index.
 */
export class ArchivalMemory1764900001000 implements MigrationInterface {
  name = 'ArchivalMemory1764900001000';

  async up(q: QueryRunner): Promise<void> {
    const pg = q.connection.options.type === 'postgres';
    await q.createTable(
      new Table({
        name: 'archives',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'name', type: 'varchar', length: '200' },
          { name: 'description', type: 'text', isNullable: true },
          { name: 'metadata', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'archives',
      new TableIndex({
        name: 'idx_archives_tenant_created',
        columnNames: ['tenant_id', 'created_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'archive_agents',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'archive_id', type: 'varchar', length: '64' },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'is_owner', type: 'boolean', default: false },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'archive_agents',
      new TableIndex({ name: 'idx_archive_agents_archive', columnNames: ['archive_id'] }),
    );
    await q.createTable(
      new Table({
        name: 'passages',
        columns: [
          // SQLite: the FTS table's key (a stable rowid); PostgreSQL needs none
          ...(pg
            ? []
            : [
                {
                  name: 'seq',
                  type: 'integer',
                  isPrimary: true,
                  isGenerated: true,
                  generationStrategy: 'increment' as const,
                },
              ]),
          { name: 'id', type: 'varchar', length: '64', isPrimary: pg, isUnique: !pg },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'archive_id', type: 'varchar', length: '64' },
          { name: 'text', type: 'text' },
          { name: 'tags', type: 'text' },
          { name: 'metadata', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'passages',
      new TableIndex({
        name: 'idx_passages_archive_created',
        columnNames: ['archive_id', 'created_at', 'id'],
      }),
    );
    await q.createIndex(
      'passages',
      new TableIndex({
        name: 'idx_passages_tenant_created',
        columnNames: ['tenant_id', 'created_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'passage_tags',
        columns: [
          { name: 'passage_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tag', type: 'varchar', length: '200', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'archive_id', type: 'varchar', length: '64' },
        ],
      }),
    );
    await q.createIndex(
      'passage_tags',
      new TableIndex({ name: 'idx_passage_tags_archive_tag', columnNames: ['archive_id', 'tag'] }),
    );

    if (pg) {
      const passages = sqlTable((q.connection.options as { schema?: string }).schema, 'passages');
      await q.query(
        `ALTER TABLE ${passages} ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED`,
      );
      await q.query(`CREATE INDEX idx_passages_search ON ${passages} USING GIN (search)`);
    } else {
      await q.query(
        `CREATE VIRTUAL TABLE passages_fts USING fts5(text, content='passages', content_rowid='seq', tokenize='porter unicode61')`,
      );
      await q.query(`CREATE TRIGGER passages_fts_insert AFTER INSERT ON passages BEGIN
        INSERT INTO passages_fts(rowid, text) VALUES (new.seq, new.text); END`);
      await q.query(`CREATE TRIGGER passages_fts_delete AFTER DELETE ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.seq, old.text); END`);
      await q.query(`CREATE TRIGGER passages_fts_update AFTER UPDATE OF text ON passages BEGIN
        INSERT INTO passages_fts(passages_fts, rowid, text) VALUES ('delete', old.seq, old.text);
        INSERT INTO passages_fts(rowid, text) VALUES (new.seq, new.text); END`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    if (q.connection.options.type === 'postgres') {
      // first, by hand: TypeORM's dropTable cannot read a generated column it did not make
      const passages = sqlTable((q.connection.options as { schema?: string }).schema, 'passages');
      await q.query(`ALTER TABLE ${passages} DROP COLUMN search`);
    } else {
      for (const t of ['insert', 'delete', 'update'])
        await q.query(`DROP TRIGGER IF EXISTS passages_fts_${t}`);
      await q.query('DROP TABLE IF EXISTS passages_fts');
    }
    await q.dropTable('passage_tags');
    await q.dropTable('passages');
    await q.dropTable('archive_agents');
    await q.dropTable('archives');
  }
}
