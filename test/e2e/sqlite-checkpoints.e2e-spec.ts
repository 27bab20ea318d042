import { readFileSync } from 'node:fs';
import { DataSource } from 'typeorm';
import { startApp, TestApp } from '../support/app-harness';

/**
 * The WAL's frames and how many of them are copied into the database file, from the wal-index header in
 * `<file>-shm` (SQLite's documented layout: `mxFrame` at byte 16, `nBackfill` at byte 96, native order).
 */
function walState(file: string): { frames: number; backfilled: number } {
  const shm = readFileSync(`${file}-shm`);
  return { frames: shm.readUInt32LE(16), backfilled: shm.readUInt32LE(96) };
}

async function writeSome(t: TestApp): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${t.baseUrl}/v1/agents/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: `ckpt-${i}`, system: 'x'.repeat(20_000) }),
    });
    expect(res.status).toBe(200);
  }
}

/**
 * `database.sqlite_checkpoint_ms`: WAL checkpoints on a worker thread, not inside the writer's commits;
 * `database.sqlite_cache_mib`: the connection's page cache.
 */
describe('SQLite checkpoints and page cache', () => {
  const sqliteOnly = process.env.TEST_DATABASE_URL ? it.skip : it;

  sqliteOnly('a worker thread copies the WAL into the database file between commits', async () => {
    const t = await startApp({ overrides: { database: { sqlite_checkpoint_ms: 20 } } });
    const file = t.config.database.sqlite_path;
    try {
      await writeSome(t);
      const deadline = Date.now() + 10_000;
      let state = walState(file);
      while (state.backfilled !== state.frames && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
        state = walState(file);
      }
      expect(state.backfilled).toBe(state.frames);
    } finally {
      await t.close();
    }
  });

  sqliteOnly(
    'with 0 the commits stay in the WAL until SQLite checkpoints inside a commit',
    async () => {
      const t = await startApp({ overrides: { database: { sqlite_checkpoint_ms: 0 } } });
      try {
        await writeSome(t);
        await new Promise((r) => setTimeout(r, 300));
        const state = walState(t.config.database.sqlite_path);
        expect(state.backfilled).toBeLessThan(state.frames);
      } finally {
        await t.close();
      }
    },
  );

  sqliteOnly(
    'the page cache is database.sqlite_cache_mib (SQLite counts it in KiB, negated)',
    async () => {
      for (const [mib, kib] of [
        [undefined, -2048],
        [16, -16384],
      ] as const) {
        const t = await startApp(mib ? { overrides: { database: { sqlite_cache_mib: mib } } } : {});
        try {
          const rows: { cache_size: number }[] = await t.app
            .get(DataSource)
            .query('PRAGMA cache_size');
          expect(rows[0].cache_size).toBe(kib);
        } finally {
          await t.close();
        }
      }
    },
  );
});
