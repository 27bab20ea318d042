import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';

/**
 * Scale-out (docs/scale-out.md): a lease row per agent (which instance processes its runs) and the
 * rows of events too big for a NOTIFY payload.
 */
export class AgentLeases1764500000000 implements MigrationInterface {
  name = 'AgentLeases1764500000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'agent_leases',
        columns: [
          { name: 'agent_id', type: 'varchar', isPrimary: true },
          { name: 'tenant_id', type: 'varchar' },
          // `<instance id>/<boot id>`
          { name: 'owner', type: 'varchar' },
          // changes with the owner: an instance that finds its own token back knows nobody else held it
          { name: 'token', type: 'bigint' },
          // milliseconds by the database's clock
          { name: 'expires_at', type: 'bigint' },
        ],
      }),
    );
    await q.createTable(
      new Table({
        name: 'bus_payloads',
        columns: [
          { name: 'id', type: 'varchar', isPrimary: true },
          { name: 'payload', type: 'text' },
          { name: 'created_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'bus_payloads',
      new TableIndex({ name: 'idx_bus_payloads_created', columnNames: ['created_at'] }),
    );
  }

  async down(q: QueryRunner): Promise<void> {
    await q.dropTable('bus_payloads');
    await q.dropTable('agent_leases');
  }
}
