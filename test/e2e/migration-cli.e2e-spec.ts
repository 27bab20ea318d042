import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource } from 'typeorm';
import { sqlTable } from '../../src/database/sql-names';
import { startApp } from '../support/app-harness';

/**
 * The TypeORM CLI's DataSource (ormconfig.ts: `npm run migration:run`, `npm run typeorm -- migration:show`
 * or `migration:revert`) reports through its logger: what it lists or does must reach the operator.
 */
describe('migration CLI', () => {
  it('migration:show lists the migrations', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'migration-cli-'));
    const before = process.env.SQLITE_PATH;
    process.env.SQLITE_PATH = path.join(dir, 'db.sqlite');
    let ds: DataSource | undefined;
    let logged: jest.SpyInstance | undefined;
    try {
      // loaded afresh, so it reads the SQLITE_PATH above (and with the Nest logger it uses)
      await jest.isolateModulesAsync(async () => {
        const { Logger } = await import('@nestjs/common');
        logged = jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
        ds = (await import('../../ormconfig')).default;
      });
      await ds!.initialize();
      await ds!.showMigrations(); // what the CLI's migration:show runs
      expect(logged).toHaveBeenCalledWith('[ ] CreateTools1763800000000');
    } finally {
      logged?.mockRestore();
      await ds?.destroy();
      if (before === undefined) delete process.env.SQLITE_PATH;
      else process.env.SQLITE_PATH = before;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('an older server on a database a newer one migrated', () => {
  it('stops at boot, naming the migrations it does not know', async () => {
    const t = await startApp({ keepDir: true });
    const ds = t.app.get(DataSource);
    const table = sqlTable((ds.options as { schema?: string }).schema, 'migrations');
    await ds.query(
      `INSERT INTO ${table} ("timestamp", "name") VALUES (9999999999999, 'FromTheFuture9999999999999')`,
    );
    await t.close();
    try {
      await expect(startApp({ dir: t.dir })).rejects.toThrow(
        /migrated by a newer version of this server \(FromTheFuture9999999999999\)/,
      );
    } finally {
      rmSync(t.dir, { recursive: true, force: true });
    }
  });
});
