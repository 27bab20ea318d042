/** A tool the agent may call, as declared in config/tools/*.yaml, over POST /v1/tools/, or built in. */
export type ToolSafety = 'read_only' | 'side_effecting' | 'privileged';
export const TOOL_SAFETIES: readonly ToolSafety[] = ['read_only', 'side_effecting', 'privileged'];
/** `client`: offered per request (Letta's `client_tools`) and run by the client, which returns the result. */
export type ToolKind = 'builtin' | 'http' | 'mcp' | 'client';

export interface HttpToolSpec {
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Values may name an environment variable as `${NAME}`; resolved only when the call is sent. */
  headers?: Record<string, string>;
  timeout_ms?: number;
}

export interface ToolDefinition {
  name: string;
  description: string;
  /** JSON Schema of the arguments object. */
  parameters: Record<string, unknown>;
  safety: ToolSafety;
  kind: ToolKind;
  http?: HttpToolSpec;
  mcp?: McpToolRef;
}

/** Where an MCP tool lives: its server (by id, and name for display) and its name there. */
export interface McpToolRef {
  server_id: string;
  server_name: string;
  tool: string;
}
