import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** The error type of a run that failed on an error (Letta's `error_type`: llm_rate_limit, …). */
export class RunErrorTypes1765090000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'runs',
      new TableColumn({ name: 'error_type', type: 'varchar', length: '64', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('runs', 'error_type');
  }
}
