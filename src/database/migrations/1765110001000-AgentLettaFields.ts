import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTable } from '../sql-names';

/** Letta's AgentState fields kept per agent: hidden, file settings, last run metrics (all nullable). */
const COLUMNS: [string, string][] = [
  ['hidden', 'boolean'],
  ['max_files_open', 'integer'],
  ['per_file_view_window_char_limit', 'integer'],
  ['last_run_completion', 'bigint'],
  ['last_run_duration_ms', 'integer'],
];

/**
 * Letta's `hidden`, `max_files_open`, `per_file_view_window_char_limit`, `last_run_completion` and
 * `last_run_duration_ms` on agents; null for the agents there were (not hidden, Letta's file defaults,
 * no run recorded yet). Plain ALTER TABLEs, which SQLite does in place.
 */
export class AgentLettaFields1765110001000 implements MigrationInterface {
  name = 'AgentLettaFields1765110001000';

  async up(q: QueryRunner): Promise<void> {
    const agents = sqlTable((q.connection.options as { schema?: string }).schema, 'agents');
    for (const [name, type] of COLUMNS)
      await q.query(`ALTER TABLE ${agents} ADD COLUMN ${name} ${type} NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    const agents = sqlTable((q.connection.options as { schema?: string }).schema, 'agents');
    for (const [name] of [...COLUMNS].reverse())
      await q.query(`ALTER TABLE ${agents} DROP COLUMN ${name}`);
  }
}
