import { Global, Module, OnModuleInit } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { TOOL_INVOKER } from '../rules/tokens';
import { BuiltinToolHandlers } from './builtin-tool-handlers';
import { UNAVAILABLE_BUILTINS } from './builtin-tools';
import { ToolInvokerService } from './tool-invoker.service';
import { ToolEntity } from './tool.entity';
import { ToolsController } from './tools.controller';
import { ToolsRepository } from './tools.repository';
import { ToolsService } from './tools.service';

/** Global: the executor injects TOOL_INVOKER, other modules register built-in handlers. */
@Global()
@Module({
  imports: [TypeOrmModule.forFeature([ToolEntity])],
  controllers: [ToolsController],
  providers: [
    ToolsRepository,
    ToolsService,
    BuiltinToolHandlers,
    ToolInvokerService,
    { provide: TOOL_INVOKER, useExisting: ToolInvokerService },
  ],
  exports: [ToolsService, BuiltinToolHandlers, ToolInvokerService, TOOL_INVOKER],
})
export class ToolsModule implements OnModuleInit {
  constructor(private readonly handlers: BuiltinToolHandlers) {}

  onModuleInit(): void {
    // send_message only delivers text; the processor turns the call into an assistant message.
    this.handlers.register('send_message', () => Promise.resolve('None'));
    for (const name of UNAVAILABLE_BUILTINS) {
      this.handlers.register(name, () =>
        Promise.reject(
          new Error(`${name} is not available on this server: it makes no outbound web requests`),
        ),
      );
    }
  }
}
