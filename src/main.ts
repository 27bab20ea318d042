import { Logger } from '@nestjs/common';
import { createApp } from './bootstrap';
import { DataSource } from 'typeorm';
import { APP_VERSION } from './common/version';
import { AppConfig, ConfigError, loadConfig } from './config/app-config';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const app = await createApp(config);
  await app.listen(config.server.port, config.server.host);
  const migrations = app.get(DataSource).migrations.length;
  // The URL is followed by a space in every format, so scripts can take it from the line.
  new Logger('Server').log(
    `listening on ${await app.getUrl()} (version ${APP_VERSION}; ${describeDatabase(config)}, ` +
      `${migrations} migrations applied; ${config.auth.api_keys.length > 0 ? `${config.auth.api_keys.length} API keys` : 'open mode, no API keys'})`,
  );
}

/** The database without credentials: the SQLite file, or PostgreSQL's host, port and database. */
function describeDatabase(config: AppConfig): string {
  if (!config.database.url) return `SQLite ${config.database.sqlite_path}`;
  const u = new URL(config.database.url);
  const schema = config.database.schema ? `, schema ${config.database.schema}` : '';
  return `PostgreSQL ${u.hostname}:${u.port || 5432}${u.pathname}${schema}`;
}

main().catch((e: unknown) => {
  // Boot failures (a broken agent file, an unreachable database) end with one line and exit 1.
  process.stderr.write(`boot failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
