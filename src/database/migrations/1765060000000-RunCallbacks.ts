import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';

/** Letta's `callback_url` of an async run: what its one call answered (sent at, HTTP status, error). */
export class RunCallbacks1765060000000 implements MigrationInterface {
  async up(q: QueryRunner): Promise<void> {
    await q.addColumn(
      'runs',
      new TableColumn({ name: 'callback', type: 'text', isNullable: true }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropColumn('runs', 'callback');
  }
}
