import { randomUUID } from 'node:crypto';
import { MigrationInterface, QueryRunner, Table, TableIndex } from 'typeorm';
import { sqlTable } from '../sql-names';

interface StoredBlock {
  id: string;
  label: string;
  value: string;
  limit: number;
  description: string | null;
  read_only: boolean;
}

/**
 * Memory blocks become rows of their own (Letta's standalone blocks), linked to agents by `agent_blocks`,
 * so one block can be shared by several agents. Each agent's blocks move out of its JSON column, in order.
 */
export class SharedBlocks1764900000000 implements MigrationInterface {
  name = 'SharedBlocks1764900000000';

  async up(q: QueryRunner): Promise<void> {
    await q.createTable(
      new Table({
        name: 'blocks',
        columns: [
          { name: 'id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'label', type: 'varchar', length: '200' },
          { name: 'value', type: 'text' },
          { name: 'char_limit', type: 'integer' },
          { name: 'description', type: 'text', isNullable: true },
          { name: 'read_only', type: 'boolean', default: false },
          { name: 'metadata', type: 'text', isNullable: true },
          { name: 'created_at', type: 'bigint' },
          { name: 'updated_at', type: 'bigint' },
        ],
      }),
    );
    await q.createIndex(
      'blocks',
      new TableIndex({
        name: 'idx_blocks_tenant_created',
        columnNames: ['tenant_id', 'created_at'],
      }),
    );
    await q.createTable(
      new Table({
        name: 'agent_blocks',
        columns: [
          { name: 'agent_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'block_id', type: 'varchar', length: '64', isPrimary: true },
          { name: 'tenant_id', type: 'varchar', length: '200' },
          { name: 'position', type: 'integer' },
        ],
      }),
    );
    await q.createIndex(
      'agent_blocks',
      new TableIndex({ name: 'idx_agent_blocks_block', columnNames: ['block_id'] }),
    );

    const schema = (q.connection.options as { schema?: string }).schema;
    const pg = q.connection.options.type === 'postgres';
    const params = (n: number, from: number) =>
      Array.from({ length: n }, (_, i) => (pg ? `$${from + i}` : '?')).join(', ');
    const agents = sqlTable(schema, 'agents');
    const rows = (await q.query(
      `SELECT id, tenant_id, blocks, created_at, updated_at FROM ${agents} ORDER BY created_at, id`,
    )) as {
      id: string;
      tenant_id: string;
      blocks: string;
      created_at: string;
      updated_at: string;
    }[];
    const link = (a: { id: string; tenant_id: string }, blockId: string, position: number) =>
      q.query(
        `INSERT INTO ${sqlTable(schema, 'agent_blocks')} (agent_id, block_id, tenant_id, position) VALUES (${params(4, 1)})`,
        [a.id, blockId, a.tenant_id, position],
      );
    // A block id in several agents' JSON: a shared block that this migration's down gave each agent a
    // copy of. Copies still alike are one block again; one edited apart since becomes a block of its own.
    const inserted = new Map<string, string>();
    const sameness = (tenantId: string, b: StoredBlock) =>
      JSON.stringify([tenantId, b.label, b.value, b.limit, b.description ?? null, b.read_only]);
    for (const a of rows) {
      const blocks = JSON.parse(a.blocks || '[]') as StoredBlock[];
      for (const [position, b] of blocks.entries()) {
        const earlier = inserted.get(b.id);
        const id = earlier === undefined ? b.id : `block-${randomUUID()}`;
        if (earlier === sameness(a.tenant_id, b)) {
          await link(a, b.id, position);
          continue;
        }
        inserted.set(id, sameness(a.tenant_id, b));
        await q.query(
          `INSERT INTO ${sqlTable(schema, 'blocks')} (id, tenant_id, label, value, char_limit, description, read_only, metadata, created_at, updated_at) VALUES (${params(10, 1)})`,
          [
            id,
            a.tenant_id,
            b.label,
            b.value,
            b.limit,
            b.description ?? null,
            pg ? b.read_only === true : b.read_only === true ? 1 : 0,
            null,
            Number(a.created_at),
            Number(a.updated_at),
          ],
        );
        await link(a, id, position);
      }
    }
    await q.query(`ALTER TABLE ${agents} DROP COLUMN blocks`);
  }

  /** Blocks no agent has, and blocks' metadata, have no place in the JSON: they are dropped. */
  async down(q: QueryRunner): Promise<void> {
    const schema = (q.connection.options as { schema?: string }).schema;
    const pg = q.connection.options.type === 'postgres';
    const agents = sqlTable(schema, 'agents');
    await q.query(`ALTER TABLE ${agents} ADD COLUMN blocks text NOT NULL DEFAULT '[]'`);
    const links = (await q.query(
      `SELECT l.agent_id, b.id, b.label, b.value, b.char_limit, b.description, b.read_only
         FROM ${sqlTable(schema, 'agent_blocks')} l JOIN ${sqlTable(schema, 'blocks')} b ON b.id = l.block_id
         ORDER BY l.agent_id, l.position`,
    )) as (Record<string, unknown> & { agent_id: string })[];
    const byAgent = new Map<string, StoredBlock[]>();
    for (const l of links) {
      const list = byAgent.get(l.agent_id) ?? [];
      list.push({
        id: l.id as string,
        label: l.label as string,
        value: l.value as string,
        limit: Number(l.char_limit),
        description: (l.description as string | null) ?? null,
        read_only: l.read_only === true || l.read_only === 1,
      });
      byAgent.set(l.agent_id, list);
    }
    for (const [agentId, blocks] of byAgent)
      await q.query(
        `UPDATE ${agents} SET blocks = ${pg ? '$1' : '?'} WHERE id = ${pg ? '$2' : '?'}`,
        [JSON.stringify(blocks), agentId],
      );
    await q.dropTable('agent_blocks');
    await q.dropTable('blocks');
  }
}
