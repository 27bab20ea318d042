import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/** Runs, steps and messages of the AgentProcessor (src/processing). */
export class Processing1763820000000 implements MigrationInterface {
  name = 'Processing1763820000000';

  async up(q: QueryRunner): Promise<void> {
    const id = { name: 'id', type: 'varchar', isPrimary: true };
    const text = (name: string, nullable = false) => ({ name, type: 'text', isNullable: nullable });
    const str = (name: string, nullable = false) => ({
      name,
      type: 'varchar',
      isNullable: nullable,
    });
    const big = (name: string, nullable = false) => ({
      name,
      type: 'bigint',
      isNullable: nullable,
    });

    await q.createTable(
      new Table({
        name: 'runs',
        columns: [
          id,
          str('tenant_id'),
          str('agent_id'),
          str('status'),
          str('stop_reason', true),
          str('batch_id'),
          text('input'),
          text('usage', true),
          text('error', true),
          text('parked', true),
          str('continued_by', true),
          big('created_at'),
          big('started_at', true),
          big('completed_at', true),
        ],
      }),
    );
    await q.createIndex(
      'runs',
      new TableIndex({
        name: 'idx_runs_agent',
        columnNames: ['tenant_id', 'agent_id', 'created_at'],
      }),
    );
    await q.createIndex(
      'runs',
      new TableIndex({ name: 'idx_runs_status', columnNames: ['status'] }),
    );

    await q.createTable(
      new Table({
        name: 'steps',
        columns: [
          id,
          str('tenant_id'),
          str('agent_id'),
          str('run_id'),
          str('batch_id'),
          { name: 'step_number', type: 'integer' },
          str('model', true),
          text('usage'),
          str('finish_reason', true),
          big('created_at'),
        ],
      }),
    );
    await q.createIndex(
      'steps',
      new TableIndex({ name: 'idx_steps_run', columnNames: ['run_id', 'step_number'] }),
    );

    await q.createTable(
      new Table({
        name: 'messages',
        columns: [
          id,
          str('tenant_id'),
          str('agent_id'),
          big('seq_id'),
          str('run_id', true),
          str('step_id', true),
          str('batch_id', true),
          str('message_type'),
          text('payload'),
          big('created_at'),
        ],
      }),
    );
    await q.createIndex(
      'messages',
      new TableIndex({
        name: 'idx_messages_agent_seq',
        columnNames: ['agent_id', 'seq_id'],
        isUnique: true,
      }),
    );
    await q.createIndex(
      'messages',
      new TableIndex({ name: 'idx_messages_run', columnNames: ['run_id', 'seq_id'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('messages');
    await q.dropTable('steps');
    await q.dropTable('runs');
  }
}
