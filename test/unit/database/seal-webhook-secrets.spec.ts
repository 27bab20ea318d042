import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { migrations } from '../../../src/database/migrations';
import { sqlTable } from '../../../src/database/sql-names';
import { SecretCipher } from '../../../src/secrets/secret-cipher';
import { webhookSecretAad } from '../../../src/webhooks/webhook.entities';

const PG_URL = process.env.TEST_DATABASE_URL;
/** The migrations up to this one (`through`) or before it, built with `key`. */
const upTo = (key: Buffer | null, through: boolean) => {
  const all = migrations(key);
  const at = all.findIndex((m) => m.name === 'SealWebhookSecrets1764930000000');
  return all.slice(0, through ? at + 1 : at);
};

/** Webhooks registered before secrets were sealed: the migration seals them (SQLite, and PostgreSQL when set). */
describe('migration SealWebhookSecrets', () => {
  const key = randomBytes(32);
  let dir: string;
  let schema: string | null;
  const open = async (list: Function[]) => {
    const common = { migrations: list, logging: false as const };
    const options: DataSourceOptions = PG_URL
      ? { type: 'postgres', url: PG_URL, schema: schema!, ...common }
      : { type: 'better-sqlite3', database: path.join(dir, 'db.sqlite'), ...common };
    const ds = new DataSource(options);
    await ds.initialize();
    return ds;
  };
  const webhooks = () => sqlTable(schema, 'webhooks');

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'seal-webhooks-'));
    schema = PG_URL ? `t_seal_${randomBytes(4).toString('hex')}` : null;
    const ds = await open([]);
    if (schema) await ds.query(`CREATE SCHEMA "${schema}"`);
    await ds.destroy();
    // the database as it was: every migration before this one, and a webhook with its secret in the clear
    const before = await open(upTo(null, false));
    await before.runMigrations();
    await before.query(
      `INSERT INTO ${webhooks()} (id, tenant_id, url, events, secret, description, created_at)
       VALUES ('webhook-1', 'team-a', 'http://127.0.0.1:9/hook', '["run.completed"]', 'whsec_clear-text-secret', NULL, 1)`,
    );
    await before.destroy();
  });
  afterEach(async () => {
    if (schema) {
      const ds = await open([]);
      await ds.query(`DROP SCHEMA "${schema}" CASCADE`);
      await ds.destroy();
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('seals each secret under the key, bound to its tenant and webhook; down gives the clear column back', async () => {
    const ds = await open(upTo(key, true));
    try {
      await ds.runMigrations();
      const [row] = await ds.query(`SELECT * FROM ${webhooks()}`);
      expect(row).not.toHaveProperty('secret');
      expect(JSON.stringify(row)).not.toContain('clear-text-secret');
      const cipher = new SecretCipher(key);
      expect(cipher.decrypt(row.secret_sealed, webhookSecretAad('team-a', 'webhook-1'))).toBe(
        'whsec_clear-text-secret',
      );
      expect(() =>
        cipher.decrypt(row.secret_sealed, webhookSecretAad('team-b', 'webhook-1')),
      ).toThrow();

      await ds.undoLastMigration();
      const [back] = await ds.query(`SELECT * FROM ${webhooks()}`);
      expect(back.secret).toBe('whsec_clear-text-secret');
      expect(back).not.toHaveProperty('secret_sealed');
    } finally {
      await ds.destroy();
    }
  });

  it('without a key it stops (nothing changed) rather than keep or lose the secrets', async () => {
    jest.spyOn(console, 'log').mockImplementation(() => undefined); // TypeORM reports the failure
    const ds = await open(upTo(null, true));
    try {
      await expect(ds.runMigrations({ transaction: 'all' })).rejects.toThrow(
        /1 webhook signing secret\(s\) to encrypt: set secrets.encryption_key/,
      );
      const [row] = await ds.query(`SELECT * FROM ${webhooks()}`);
      expect(row.secret).toBe('whsec_clear-text-secret');
    } finally {
      await ds.destroy();
      jest.restoreAllMocks();
    }
  });
});
