import { Inject, Injectable } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG, OUTBOUND_HOST_POLICY } from '../config/config.module';
import type { ToolInvoker } from '../core/executor/contracts';
import type { Clock } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { DEFAULT_TIMEZONE, formatLocalTime } from '../core/agents/timezone';
import { BuiltinToolHandlers } from './builtin-tool-handlers';
import { HostPolicy } from '../core/net/host-policy';
import { SecretsService } from '../secrets/secrets.service';
import { HttpCallLimits, invokeHttpTool } from './http-tool.invoker';
import { headerPlaceholders } from './tool-declaration';

type InvokeCtx = Parameters<ToolInvoker['invoke']>[2];

/** Runs `mcp` tools; the MCP module registers it (the tools module does not know MCP clients). */
export type McpToolCaller = ToolInvoker['invoke'];
/** An agent's time zone (Letta's `timezone`); the agents module registers it. */
export type TimeZoneSource = (tenantId: string, agentId: string) => Promise<string>;

/** Runs a tool's implementation: built-ins through their registered handlers, http tools over the network. */
@Injectable()
export class ToolInvokerService implements ToolInvoker {
  constructor(
    private readonly builtins: BuiltinToolHandlers,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(OUTBOUND_HOST_POLICY) policy: HostPolicy,
    @Inject(CLOCK) private readonly clock: Clock,
    private readonly secrets: SecretsService,
  ) {
    const h = config.tools.http;
    this.httpLimits = {
      maxResponseBytes: h.max_response_bytes,
      maxRedirects: h.max_redirects,
      policy,
    };
  }

  private readonly httpLimits: HttpCallLimits;

  private mcp: McpToolCaller | null = null;

  registerMcpCaller(caller: McpToolCaller): void {
    this.mcp = caller;
  }

  private timeZones: TimeZoneSource | null = null;

  registerTimeZoneSource(source: TimeZoneSource): void {
    this.timeZones = source;
  }

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
        return invokeHttpTool(
          tool.http,
          args,
          ctx,
          // resolved at the last moment, from the calling tenant's (and agent's) secrets only
          await this.secrets.resolve(
            ctx.tenantId,
            headerPlaceholders(tool.http.headers).map((p) => p.name),
            ctx.agentId,
          ),
          this.httpLimits,
        );
      case 'mcp':
        if (!this.mcp) return { status: 'error', value: 'MCP tools are not available' };
        return this.mcp(tool, args, ctx);
      case 'client': // the executor hands these to the client; never invoked here
        return { status: 'error', value: `tool ${tool.name} runs on the client` };
    }
  }

  /** Built-in returns are packaged the way Letta packages them: `{status, message, time}`. */
  private async invokeBuiltin(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    ctx: InvokeCtx,
  ): Promise<{ status: 'success' | 'error'; value: string }> {
    const handler = this.builtins.get(tool.name);
    const timeZone = await this.timeZoneOf(ctx);
    if (!handler)
      return {
        status: 'error',
        value: this.packaged('Failed', `built-in tool ${tool.name} is not available`, timeZone),
      };
    try {
      const result = await handler(args, ctx);
      return { status: 'success', value: this.packaged('OK', result ?? 'None', timeZone) };
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      return {
        status: 'error',
        value: this.packaged(
          'Failed',
          `Error executing function ${tool.name}: ${message}`,
          timeZone,
        ),
      };
    }
  }

  /** The calling agent's zone (UTC when it cannot be read: the agent was deleted mid-call). */
  private async timeZoneOf(ctx: InvokeCtx): Promise<string> {
    if (!this.timeZones) return DEFAULT_TIMEZONE;
    return this.timeZones(ctx.tenantId, ctx.agentId).catch(() => DEFAULT_TIMEZONE);
  }

  /** Letta's `package_function_response`: its `time` as Letta's get_local_time, in the agent's zone. */
  private packaged(status: 'OK' | 'Failed', message: string, timeZone: string): string {
    return JSON.stringify({
      status,
      message,
      time: formatLocalTime(new Date(this.clock.now()), timeZone),
    });
  }
}
