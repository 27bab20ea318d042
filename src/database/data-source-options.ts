import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { Database } from 'better-sqlite3';
import type { DataSourceOptions, LoggerOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { ENTITIES } from './entities';
import { migrations } from './migrations';
import { QueryLogger } from './query-logger';
import { prepareSqlite } from './sqlite-driver';

/** One description of the database for the app and the TypeORM CLI. Never `synchronize`. */
export function dataSourceOptions(config: AppConfig): DataSourceOptions {
  const logging: LoggerOptions =
    config.log_level === 'debug' ? ['error', 'warn', 'migration'] : ['error'];
  const common = {
    entities: ENTITIES,
    migrations: migrations(config.secrets.encryption_key),
    migrationsRun: false,
    synchronize: false,
    logging,
    logger: new QueryLogger(logging),
  };
  if (config.database.url) {
    return {
      type: 'postgres',
      url: config.database.url,
      ...(config.database.schema ? { schema: config.database.schema } : {}),
      ...common,
    };
  }
  mkdirSync(path.dirname(config.database.sqlite_path), { recursive: true });
  return {
    type: 'better-sqlite3',
    database: config.database.sqlite_path,
    prepareDatabase: (db: Database) => prepareSqlite(db, config.database.sqlite_cache_mib),
    enableWAL: true,
    ...common,
  };
}
