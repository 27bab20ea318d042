import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** The agent field `budgets` (JSON; null = none set). */
export class AgentBudgets1763845000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'agents',
      new TableColumn({ name: 'budgets', type: 'text', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('agents', 'budgets');
  }
}
