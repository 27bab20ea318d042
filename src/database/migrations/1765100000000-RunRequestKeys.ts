import { MigrationInterface, QueryRunner, TableColumn, TableIndex } from 'typeorm';

/**
 * Letta's request dedupe: a send's otids digest, so a retried send answers the run stored for it. Unique:
 * two copies of a send arriving at once (at two instances) store one run.
 */
export class RunRequestKeys1765100000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'runs',
      new TableColumn({ name: 'request_key', type: 'varchar', length: '64', isNullable: true }),
    );
    await q.createIndex(
      'runs',
      new TableIndex({
        name: 'idx_runs_request_key',
        columnNames: ['agent_id', 'request_key'],
        isUnique: true,
        where: 'request_key IS NOT NULL',
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropIndex('runs', 'idx_runs_request_key');
    await q.dropColumn('runs', 'request_key');
  }
}
