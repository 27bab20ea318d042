import { Injectable } from '@nestjs/common';

export interface BuiltinToolContext {
  tenantId: string;
  agentId: string;
  runId: string;
  toolCallId: string;
  signal: AbortSignal;
}

/** A built-in's implementation: returns the tool's result text, or throws (an error return). */
export type BuiltinToolHandler = (
  args: Record<string, unknown>,
  ctx: BuiltinToolContext,
) => Promise<string | null | undefined>;

/**
 * Implementations of the built-in tools, registered by the module that owns the behaviour
 * (the agents module for core memory, processing for conversation_search).
 */
@Injectable()
export class BuiltinToolHandlers {
  private readonly handlers = new Map<string, BuiltinToolHandler>();

  register(name: string, handler: BuiltinToolHandler): void {
    this.handlers.set(name, handler);
  }

  get(name: string): BuiltinToolHandler | undefined {
    return this.handlers.get(name);
  }
}
