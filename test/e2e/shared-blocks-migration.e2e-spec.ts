import { rmSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source-options';
import { startApp, TestApp } from '../support/app-harness';
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

/** Closes the app and undoes the migrations through SharedBlocks: the database of an older server. */
async function revertToJsonBlocks(t: TestApp): Promise<{ dir: string; ds: DataSource }> {
  const { dir, config } = t;
  await t.close();
  const ds = new DataSource(dataSourceOptions(config));
  await ds.initialize();
  await undoThrough(ds, 'SharedBlocks1764900000000');
  return { dir, ds };
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
    const { dir, ds } = await revertToJsonBlocks(t);
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

  it('a block two agents share comes back shared after down and up; copies edited apart stay apart', async () => {
    let t = await startApp({ keepDir: true });
    const agent = async (name: string) =>
      (await api(t, 'POST', '/v1/agents/', { name, memory_blocks: [] })).body.id as string;
    const [a, b, c] = [await agent('a'), await agent('b'), await agent('c')];
    const block = async (label: string) =>
      (await api(t, 'POST', '/v1/blocks/', { label, value: `${label} v1` })).body.id as string;
    const shared = await block('shared');
    const apart = await block('apart');
    for (const [agentId, blockId] of [
      [a, shared],
      [b, shared],
      [b, apart],
      [c, apart],
    ])
      expect(
        (await api(t, 'PATCH', `/v1/agents/${agentId}/core-memory/blocks/attach/${blockId}`))
          .status,
      ).toBe(200);
    const { dir, ds } = await revertToJsonBlocks(t);
    // the older server, run on the reverted database, edits c's copy of `apart` only
    const [row] = await ds.query<{ blocks: string }[]>(
      `SELECT blocks FROM ${table(ds, 'agents')} WHERE id = '${c}'`,
    );
    const edited = (JSON.parse(row.blocks) as { value: string }[]).map((x) => ({
      ...x,
      value: 'apart v2',
    }));
    await ds.query(
      `UPDATE ${table(ds, 'agents')} SET blocks = '${JSON.stringify(edited)}' WHERE id = '${c}'`,
    );
    await ds.destroy();

    t = await startApp({ dir }); // up again at boot: it used to fail on the shared block's id
    try {
      const blocks = async (agentId: string) =>
        (await api(t, 'GET', `/v1/agents/${agentId}/core-memory/blocks`)).body as {
          id: string;
          label: string;
          value: string;
        }[];
      const [ofA, ofB, ofC] = [await blocks(a), await blocks(b), await blocks(c)];
      expect(ofA).toEqual([expect.objectContaining({ id: shared, value: 'shared v1' })]);
      // (in the list's order: newest first, as Letta's; what matters here is which blocks)
      expect(ofB).toHaveLength(2);
      expect(ofB).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: shared, value: 'shared v1' }),
          expect.objectContaining({ id: apart, value: 'apart v1' }),
        ]),
      );
      expect(ofC).toEqual([expect.objectContaining({ label: 'apart', value: 'apart v2' })]);
      expect(ofC[0].id).not.toBe(apart);
      // one shared block again: an edit through one agent reaches the other
      await api(t, 'PATCH', `/v1/blocks/${shared}`, { value: 'shared v2' });
      expect((await blocks(a))[0].value).toBe('shared v2');
    } finally {
      await t.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
