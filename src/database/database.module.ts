import { Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { dataSourceOptions } from './data-source-options';
import { GroupCommit } from './group-commit';
import { Transactor } from './transactor';

@Global()
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [APP_CONFIG],
      // Migrations run at boot, before any module reads a table (see bootstrap.ts).
      useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config), migrationsRun: true }),
    }),
  ],
  providers: [Transactor, GroupCommit],
  exports: [Transactor, GroupCommit],
})
export class DatabaseModule {}
