import { DEFAULT_RETURN_CHAR_LIMIT } from '../core/tools/tool-definition';
import { BUILTIN_TOOL_TYPES } from './builtin-tools';
import { shownValues } from '../core/secrets/declared-values';
import type { ToolView } from './tools.service';

/**
 * A tool in Letta's response shape, plus our `safety`, `kind`, `source` and `http` (header values as they
 * may be shown: `${NAME}` references, literal text `[redacted]`).
 */
export function toToolResponse(t: ToolView): Record<string, unknown> {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    tool_type:
      t.kind === 'builtin'
        ? (BUILTIN_TOOL_TYPES[t.name] ?? 'letta_core')
        : t.kind === 'mcp'
          ? 'external_mcp'
          : 'custom',
    source_type: 'json',
    json_schema: { name: t.name, description: t.description, parameters: t.parameters },
    args_json_schema: t.parameters,
    // Letta tags an MCP tool `mcp:<server_name>` and keeps its server in metadata_.
    tags: t.mcp ? [`mcp:${t.mcp.server_name}`] : (t.tags ?? []),
    return_char_limit: t.return_char_limit ?? DEFAULT_RETURN_CHAR_LIMIT,
    default_requires_approval: t.default_requires_approval ?? null,
    // the executor runs a turn's neighbouring read_only calls together (docs/executor.md)
    enable_parallel_execution: t.safety === 'read_only',
    metadata_: t.mcp ? { mcp: { server_name: t.mcp.server_name, server_id: t.mcp.server_id } } : {},
    // no tenant code here (http, MCP and built-in tools only), nor Letta Cloud's projects and users
    source_code: null,
    pip_requirements: null,
    npm_requirements: null,
    project_id: null,
    created_by_id: null,
    last_updated_by_id: null,
    safety: t.safety,
    kind: t.kind,
    source: t.source,
    ...(t.http
      ? {
          http: {
            url: t.http.url,
            method: t.http.method,
            ...(t.http.headers ? { headers: shownValues(t.http.headers) } : {}),
            ...(t.http.timeout_ms ? { timeout_ms: t.http.timeout_ms } : {}),
          },
        }
      : {}),
    created_at: t.created_at === null ? null : new Date(t.created_at).toISOString(),
    updated_at: t.updated_at === null ? null : new Date(t.updated_at).toISOString(),
  };
}
