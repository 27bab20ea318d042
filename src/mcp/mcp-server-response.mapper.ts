import { shownArgs, shownValue, shownValues } from '../core/secrets/declared-values';
import type { McpServerEntity } from './mcp-server.entity';

/**
 * An MCP server in Letta's flat response shape (`StdioMCPServer` / `StreamableHTTPMCPServer`), plus our
 * `tool_safety`, `source` and times. Values are shown as declared: `${SECRET}` references stay, and
 * literal text (only an operator file may hold it) is shown as `[redacted]`, as are the values of an
 * operator command's credential flags (`--api-key …`): every tenant sees the operator's servers.
 */
export function toMcpServerResponse(s: McpServerEntity): Record<string, unknown> {
  const c = s.config;
  const transport =
    c.mcp_server_type === 'stdio'
      ? {
          command: c.command,
          args: s.source === 'file' ? shownArgs(c.args) : c.args,
          env: shownValues(c.env),
        }
      : {
          server_url: c.server_url,
          auth_header: c.auth_header,
          auth_token: c.auth_token === null ? null : shownValue(c.auth_token),
          custom_headers: shownValues(c.custom_headers),
        };
  return {
    id: s.id,
    server_name: s.server_name,
    mcp_server_type: c.mcp_server_type,
    ...transport,
    tool_safety: s.tool_safety,
    source: s.source,
    created_at: new Date(s.created_at).toISOString(),
    updated_at: new Date(s.updated_at).toISOString(),
  };
}
