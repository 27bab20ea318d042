import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/**
 * Letta's step feedback (`PATCH /v1/steps/{id}/feedback`: positive / negative and tags) and the model
 * call's timing per step (`GET /v1/steps/{id}/metrics`).
 */
export class StepFeedback1765020001000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumns('steps', [
      new TableColumn({ name: 'feedback', type: 'varchar', length: '16', isNullable: true }),
      new TableColumn({ name: 'tags', type: 'text', isNullable: true }),
      new TableColumn({ name: 'model_call_started_at', type: 'bigint', isNullable: true }),
      new TableColumn({ name: 'model_call_ns', type: 'bigint', isNullable: true }),
    ]);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const c of ['model_call_ns', 'model_call_started_at', 'tags', 'feedback'])
      await q.dropColumn('steps', c);
  }
}
