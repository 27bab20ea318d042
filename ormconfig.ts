import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { loadConfig } from './src/config/app-config';
import { dataSourceOptions } from './src/database/data-source-options';

/** The DataSource the TypeORM CLI uses (`npm run typeorm -- migration:run`); the app builds the same one. */
export default new DataSource(dataSourceOptions(loadConfig(process.env)));
