import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** The agent field `client_tools`: names of client tools its rules may name (JSON; null = none). */
export class AgentClientTools1764600001000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'agents',
      new TableColumn({ name: 'client_tools', type: 'text', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('agents', 'client_tools');
  }
}
