import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { sqlTable } from '../sql-names';

/**
 * A tool call is its tool_call_id within the model step that made it: some OpenAI-compatible servers
 * give every response the same ids (`call_0`, `call_1`, …), so an id alone names several calls of an
 * agent. Tool-call claims (at most once per call) get the step in their primary key; claims stored
 * before keep '' and stand for their id in any step.
 */
export class ToolCallClaimsPerStep1765110002000 implements MigrationInterface {
  name = 'ToolCallClaimsPerStep1765110002000';

  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'executor_tool_call_claims',
      new TableColumn({
        name: 'step_id',
        type: 'varchar',
        length: '64',
        default: "''",
        isPrimary: true,
      }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    // one claim per tool_call_id again: the id counts as executed if any of its calls was
    const claims = sqlTable(
      (q.connection.options as { schema?: string }).schema,
      'executor_tool_call_claims',
    );
    await q.query(
      `DELETE FROM ${claims} WHERE EXISTS (
         SELECT 1 FROM ${claims} o WHERE o.agent_id = ${claims}.agent_id
           AND o.tool_call_id = ${claims}.tool_call_id AND o.step_id < ${claims}.step_id)`,
    );
    await q.dropColumn('executor_tool_call_claims', 'step_id');
  }
}
