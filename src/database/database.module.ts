import { Global, Module, OnApplicationShutdown } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';
import { GroupCommit } from './group-commit';
import { openDatabase, releaseDatabase } from './open-database';
import { Transactor } from './transactor';

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => dataSourceOptions(config),
      // Migrations run here, before any module reads a table, under a lock (see open-database.ts).
      dataSourceFactory: (options) => openDatabase(options!),
    }),
  ],
  providers: [Transactor, GroupCommit],
  exports: [Transactor, GroupCommit],
})
export class DatabaseModule implements OnApplicationShutdown {
  constructor(private readonly dataSource: DataSource) {}

  onApplicationShutdown(): void {
    releaseDatabase(this.dataSource);
  }
}
