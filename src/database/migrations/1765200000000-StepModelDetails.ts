import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Letta's step fields of the model call: `model_handle`, `model_endpoint`, `context_window_limit`. */
export class StepModelDetails1765200000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumns('steps', [
      new TableColumn({ name: 'model_handle', type: 'varchar', isNullable: true }),
      new TableColumn({ name: 'model_endpoint', type: 'text', isNullable: true }),
      new TableColumn({ name: 'context_window_limit', type: 'integer', isNullable: true }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const c of ['context_window_limit', 'model_endpoint', 'model_handle'])
      await q.dropColumn('steps', c);
  }
}
