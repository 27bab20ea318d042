import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * Vector search in archival memory: the embedding model of an archive and of an agent (Letta's
 * EmbeddingConfig as JSON; null = none), and one vector per embedded passage, float32 little-endian in
 * a BLOB (SQLite) or bytea (PostgreSQL; pgvector is not assumed). The vectors sit in their own table so
 * the passages table, with its FTS triggers on SQLite, is never rebuilt; the columns are added by plain
 * ALTER TABLE, which SQLite does in place (TypeORM's addColumn would rebuild the table).
 */
export class Embeddings1765010000000 implements MigrationInterface {
  name = 'Embeddings1765010000000';

  async up(q: QueryRunner): Promise<void> {
    const pg = q.connection.options.type === 'postgres';
    const schema = (q.connection.options as { schema?: string }).schema;
    for (const table of ['archives', 'agents'])
      await q.query(`ALTER TABLE ${sqlTable(schema, table)} ADD COLUMN embedding_config text NULL`);
    await q.createTable(
      new Table({
        name: 'passage_embeddings',
        columns: [
          { name: 'passage_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'archive_id', type: 'varchar', length: '64' },
          { name: 'handle', type: 'varchar', length: '300' },
          { name: 'vector', type: pg ? 'bytea' : 'blob' },
        ],
      }),
    );
    await q.createIndex(
      'passage_embeddings',
      new TableIndex({ name: 'idx_passage_embeddings_archive', columnNames: ['archive_id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('passage_embeddings');
    const schema = (q.connection.options as { schema?: string }).schema;
    // SQLite ≥ 3.35 drops a column in place too
    for (const table of ['agents', 'archives'])
      await q.query(`ALTER TABLE ${sqlTable(schema, table)} DROP COLUMN embedding_config`);
  }
}
