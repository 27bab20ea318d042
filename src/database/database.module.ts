import { Global, Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';
import { GroupCommit } from './group-commit';
import { openDatabase, releaseDatabase } from './open-database';
import { ScanSlots } from './scan-slots';
import { BACKSTOP_PAGES, SqliteCheckpointer, startSqliteCheckpointer } from './sqlite-checkpointer';
import { Transactor } from './transactor';

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      // no retries: a database that cannot be opened at boot (in use, unreachable, a bad URL) ends the
      // boot with one line and exit 1 at once; a supervisor restarts the server
      useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config), retryAttempts: 0 }),
      // Migrations run here, before any module reads a table, under a lock (see open-database.ts).
      dataSourceFactory: (options) => openDatabase(options!),
    }),
  ],
  providers: [Transactor, GroupCommit, ScanSlots],
  exports: [Transactor, GroupCommit, ScanSlots],
})
export class DatabaseModule implements OnModuleInit, OnApplicationShutdown {
  private checkpointer: SqliteCheckpointer | null = null;

  constructor(
    private readonly dataSource: DataSource,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    const intervalMs = this.config.database.sqlite_checkpoint_ms;
    if (this.dataSource.options.type !== 'better-sqlite3' || intervalMs === 0) return;
    await this.dataSource.query(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);
    this.checkpointer = startSqliteCheckpointer(
      this.dataSource.options.database,
      intervalMs,
      () => {
        // SQLite's default: the writer checkpoints inside its commits again
        this.dataSource.query('PRAGMA wal_autocheckpoint = 1000').catch(() => undefined);
      },
    );
  }

  async onApplicationShutdown(): Promise<void> {
    // the checkpoint thread lets go of the file before the process lock does
    await this.checkpointer?.stop();
    releaseDatabase(this.dataSource);
  }
}
