import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { startApp } from '../support/app-harness';
import { api } from '../support/processing-fixtures';

const table = (ds: DataSource, name: string) => {
  const schema = (ds.options as { schema?: string }).schema;
  return ds.options.type === 'postgres' && schema ? `"${schema}"."${name}"` : `"${name}"`;
};

/** Undoes migrations down to (and including) `name`, newest first. */
async function undoThrough(ds: DataSource, name: string): Promise<void> {
  for (;;) {
    const [last] = await ds.query<{ name: string }[]>(
      `SELECT name FROM ${table(ds, 'migrations')} ORDER BY id DESC LIMIT 1`,
    );
    await ds.undoLastMigration({ transaction: 'all' });
    if (last.name === name) return;
  }
}

/**
 * The SharedBlocks migration carries existing agents' blocks (JSON on the agent row) over to the
 * blocks tables, in order, with their ids; its down puts them back.
 */
describe('migration: memory blocks move to their own tables', () => {
  it('down and up again keep every agent its blocks, ids and order', async () => {
    let t = await startApp({ keepDir: true });
    const created = await api(t, 'POST', '/v1/agents/', {
      name: 'carried',
      memory_blocks: [
        { label: 'human', value: 'Ada', limit: 100 },
        { label: 'persona', value: 'Helper', read_only: true, description: 'who' },
      ],
    });
    const before = created.body.memory.blocks as { id: string }[];
    const dir = t.dir;
    const config = t.config;
    await t.close();

    const ds = new DataSource(dataSourceOptions(config));
    await ds.initialize();
    await undoThrough(ds, 'SharedBlocks1764900000000');
    const [row] = await ds.query<{ blocks: string }[]>(
      `SELECT blocks FROM ${table(ds, 'agents')} WHERE id = '${created.body.id as string}'`,
    );
    expect(JSON.parse(row.blocks)).toEqual([
      expect.objectContaining({ id: before[0].id, label: 'human', value: 'Ada', limit: 100 }),
      expect.objectContaining({ id: before[1].id, label: 'persona', read_only: true }),
    ]);
    await ds.destroy();

    t = await startApp({ dir }); // the app migrates up again at boot
    try {
      const again = await api(t, 'GET', `/v1/agents/${created.body.id as string}`);
      expect(again.body.memory.blocks).toEqual(before);
      const standalone = await api(t, 'GET', `/v1/blocks/${before[0].id}`);
      expect(standalone.body).toMatchObject({ label: 'human', value: 'Ada', limit: 100 });
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
