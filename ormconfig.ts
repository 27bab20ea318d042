import 'reflect-metadata';
import { DataSource, LoggerOptions } from 'typeorm';
import { loadConfig } from './src/config/app-config';
import { dataSourceOptions } from './src/database/data-source-options';
import { QueryLogger } from './src/database/query-logger';

/**
 * The DataSource the TypeORM CLI uses (`npm run typeorm -- migration:run`); the app builds the same one.
 * The CLI reports through the logger (`migration:show`'s list, what `migration:revert` undid), which the
 * app's own leaves quiet, so here it says what it does.
 */
const logging: LoggerOptions = ['error', 'warn', 'schema', 'migration'];
export default new DataSource({
  ...dataSourceOptions(loadConfig(process.env)),
  logging,
  logger: new QueryLogger(logging),
});
