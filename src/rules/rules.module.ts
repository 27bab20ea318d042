import { Global, Module } from '@nestjs/common';
import { ToolExecutorService } from './tool-executor.service';

/** The ToolExecutor as a Nest provider; global so processing can inject it without an import cycle. */
@Global()
@Module({
  providers: [ToolExecutorService],
  exports: [ToolExecutorService],
})
export class RulesModule {}
