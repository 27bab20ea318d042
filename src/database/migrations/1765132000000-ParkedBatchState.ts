import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * A batch parked for consent (or a client tool's result) keeps its state however long it waits: the TTL
 * pruning skips it until the batch goes on. Its counts were dropped after a day, so a call approved later
 * ran past a max_count or exclusive-group rule.
 */
export class ParkedBatchState1765132000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'executor_batches',
      new TableColumn({ name: 'parked', type: 'boolean', default: false }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('executor_batches', 'parked');
  }
}
