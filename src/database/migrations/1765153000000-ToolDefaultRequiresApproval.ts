import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Letta's `default_requires_approval` of a tool (null: never set). */
export class ToolDefaultRequiresApproval1765153000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'tools',
      new TableColumn({ name: 'default_requires_approval', type: 'boolean', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('tools', 'default_requires_approval');
  }
}
