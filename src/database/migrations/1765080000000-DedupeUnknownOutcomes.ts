import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** A deduped call that did not finish (timed out, stopped): its outcome is unknown, so retries are refused. */
export class DedupeUnknownOutcomes1765080000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'executor_dedupe',
      new TableColumn({ name: 'outcome_unknown', type: 'boolean', default: false }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('executor_dedupe', 'outcome_unknown');
  }
}
