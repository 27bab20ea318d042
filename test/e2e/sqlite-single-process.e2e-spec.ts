import { rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { startApp } from '../support/app-harness';
import { spawnServer } from '../support/server-process';

/** Boots the server in its own process on this SQLite file; resolves with its exit code and stderr. */
async function bootSecondProcess(
  sqlitePath: string,
  dir: string,
): Promise<{ code: number | null; err: string }> {
  const server = spawnServer({
    env: {
      SQLITE_PATH: sqlitePath,
      AGENTS_DIR: path.join(dir, 'agents'),
      TOOLS_DIR: path.join(dir, 'tools'),
      LOG_LEVEL: 'error',
    },
  });
  try {
    // it is expected to refuse to start; should it listen, the test fails and the finally stops it
    return {
      code: await Promise.race([server.exited, server.listening.then(() => -1)]),
      err: server.stderr(),
    };
  } finally {
    await server.kill();
  }
}

/** SQLite serves one process: a second server on the same file refuses to start instead of corrupting it. */
describe('SQLite: one process per database file', () => {
  const sqliteOnly = process.env.TEST_DATABASE_URL ? it.skip : it;

  sqliteOnly(
    'a second process on the same file exits 1 naming the holder; a dead holder’s lock is taken over',
    async () => {
      const t = await startApp({ keepDir: true });
      const file = t.config.database.sqlite_path;
      try {
        const second = await bootSecondProcess(file, t.dir);
        expect(second.code).toBe(1);
        expect(second.err).toContain(`is in use by another server process (pid ${process.pid})`);
        // the same file through a link to its folder: the same lock
        const link = path.join(t.dir, 'linked');
        symlinkSync(path.dirname(file), link);
        const linked = await bootSecondProcess(path.join(link, path.basename(file)), t.dir);
        expect(linked.code).toBe(1);
        expect(linked.err).toContain('is in use by another server process');
        // one line, no retries
        expect(linked.err).not.toContain('Retrying');
        // the first one is undisturbed
        expect((await fetch(`${t.baseUrl}/v1/health`)).status).toBe(200);
      } finally {
        await t.close();
      }
      // a lock left by a process that is gone (kill -9) does not stop the next boot
      writeFileSync(`${file}.lock`, '999999999');
      const again = await startApp({ dir: t.dir });
      await again.close();
      rmSync(t.dir, { recursive: true, force: true });
    },
    180_000, // it spawns servers: slow on a loaded machine
  );
});
