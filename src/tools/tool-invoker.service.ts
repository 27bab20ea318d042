import { Inject, Injectable } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { ToolInvoker } from '../core/executor/contracts';
import type { Clock } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { BuiltinToolHandlers } from './builtin-tool-handlers';
import { invokeHttpTool } from './http-tool.invoker';

type InvokeCtx = Parameters<ToolInvoker['invoke']>[2];

/** Runs a tool's implementation: built-ins through their registered handlers, http tools over the network. */
@Injectable()
export class ToolInvokerService implements ToolInvoker {
  constructor(
    private readonly builtins: BuiltinToolHandlers,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  async invoke(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    ctx: InvokeCtx,
  ): Promise<{ status: 'success' | 'error'; value: string }> {
    switch (tool.kind) {
      case 'builtin':
        return this.invokeBuiltin(tool, args, ctx);
      case 'http':
        if (!tool.http) return { status: 'error', value: `tool ${tool.name} has no http settings` };
        return invokeHttpTool(tool.http, args, ctx, this.config.secrets_env);
    }
  }

  /** Built-in returns are packaged the way Letta packages them: `{status, message, time}`. */
  private async invokeBuiltin(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    ctx: InvokeCtx,
  ): Promise<{ status: 'success' | 'error'; value: string }> {
    const handler = this.builtins.get(tool.name);
    if (!handler)
      return {
        status: 'error',
        value: this.packaged('Failed', `built-in tool ${tool.name} is not available`),
      };
    try {
      const result = await handler(args, ctx);
      return { status: 'success', value: this.packaged('OK', result ?? 'None') };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return {
        status: 'error',
        value: this.packaged('Failed', `Error executing function ${tool.name}: ${message}`),
      };
    }
  }

  private packaged(status: 'OK' | 'Failed', message: string): string {
    return JSON.stringify({ status, message, time: new Date(this.clock.now()).toISOString() });
  }
}
