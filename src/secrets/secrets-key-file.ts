import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { AppConfig } from '../config/app-config';

/**
 * The embedded default keeps secrets working with no set-up: on SQLite with no `secrets.encryption_key`,
 * a key is generated once into `<sqlite file>.secrets-key` (mode 0600) and read at every later boot. It
 * protects copies of the database made without that file (backups, a leaked file). On PostgreSQL
 * nothing is generated: every instance must hold the same key, so the operator sets it.
 * Returns the config with the key, and what was done (for the boot log), or the config unchanged.
 */
export function withSecretsKeyFile(config: AppConfig): { config: AppConfig; note: string | null } {
  if (config.secrets.encryption_key || !config.secrets.generate_key_file || config.database.url)
    return { config, note: null };
  const file = `${config.database.sqlite_path}.secrets-key`;
  let note = `secrets key read from ${file}`;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    // 'wx': never overwrite a key that exists (its secrets would no longer decrypt)
    writeFileSync(file, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
    note = `secrets key generated into ${file} (keep it with the database; or set SECRETS_ENCRYPTION_KEY)`;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
  if (key.length !== 32)
    throw new Error(
      `${file} does not hold a 32-byte base64 key: restore it, or remove it and its secrets`,
    );
  return { config: { ...config, secrets: { ...config.secrets, encryption_key: key } }, note };
}
