import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { startApp } from '../support/app-harness';

const root = path.join(__dirname, '..', '..');

/** Boots the server in its own process on this SQLite file; resolves with its exit code and stderr. */
function bootSecondProcess(
  sqlitePath: string,
  dir: string,
): Promise<{ code: number | null; err: string }> {
  const child = spawn(process.execPath, ['-r', 'ts-node/register/transpile-only', 'src/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      PORT: '0',
      SQLITE_PATH: sqlitePath,
      AGENTS_DIR: path.join(dir, 'agents'),
      TOOLS_DIR: path.join(dir, 'tools'),
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, err })));
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
