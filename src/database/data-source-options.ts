import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { ENTITIES } from './entities';
import { MIGRATIONS } from './migrations';
import { SQLITE_DRIVER } from './sqlite-driver';

/** One description of the database for the app and the TypeORM CLI. Never `synchronize`. */
export function dataSourceOptions(config: AppConfig): DataSourceOptions {
  const common = {
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsRun: false,
    synchronize: false,
    logging:
      config.log_level === 'debug'
        ? (['error', 'warn', 'migration'] as const)
        : (['error'] as const),
  };
  if (config.database.url) {
    return {
      type: 'postgres',
      url: config.database.url,
      ...(config.database.schema ? { schema: config.database.schema } : {}),
      ...common,
      logging: [...common.logging],
    };
  }
  mkdirSync(path.dirname(config.database.sqlite_path), { recursive: true });
  return {
    type: 'sqlite',
    driver: SQLITE_DRIVER,
    database: config.database.sqlite_path,
    enableWAL: true,
    busyErrorRetry: 50,
    ...common,
    logging: [...common.logging],
  };
}
