/** The REST client of the console: the public /v1 API with the signed-in key (session storage). */

const KEY = 'rulebound.apiKey';

const refusedListeners = new Set<() => void>();

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  signIn: (key: string) => sessionStorage.setItem(KEY, key),
  signOut: () => sessionStorage.removeItem(KEY),
  /** Called when the server refuses the held key mid-session (revoked, rotated): back to sign-in. */
  onRefused: (l: () => void) => {
    refusedListeners.add(l);
    return () => refusedListeners.delete(l);
  },
};

export interface Problem {
  path: string;
  message: string;
}

/** An API error as the server reports it: `{code, message, details}`. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
  get problems(): Problem[] {
    const p = this.details.problems;
    return Array.isArray(p) ? (p as Problem[]) : [];
  }
}

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const key = session.key();
  const res = await fetch(path, {
    method,
    headers: {
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.status === 401 && key) refusedListeners.forEach((l) => l());
  if (!res.ok) {
    const e = (json ?? {}) as {
      code?: string;
      message?: string;
      details?: Record<string, unknown>;
    };
    throw new ApiError(
      res.status,
      e.code ?? `HTTP_${res.status}`,
      e.message ?? res.statusText,
      e.details ?? {},
    );
  }
  return json as T;
}

// ---------------------------------------------------------------- wire shapes (what the console reads)

export interface ConsentRequest {
  id: string;
  agent_id: string;
  run_id: string;
  tool_call_id: string;
  tool_name: string;
  arguments: Record<string, unknown>;
  scope: string;
  reason: string;
  created_at: string;
  expires_at: string;
}

export interface Resolved {
  type: 'consent.resolved';
  request_id: string;
  decision: string;
  reason?: string;
  decided_by: string;
  channel: string;
  grant_id?: string;
}

export interface Tool {
  id: string;
  name: string;
  description: string | null;
  safety?: string;
  kind?: string;
  args_json_schema?: Record<string, unknown> | null;
}

export interface Agent {
  id: string;
  name: string;
  description: string | null;
  system: string;
  model: string | null;
  tags: string[];
  tools: Tool[];
  tool_rules: Record<string, unknown>[];
  memory: { blocks: { id: string; label: string; value: string; limit?: number }[] };
  tool_executor?: Record<string, unknown> | null;
  model_script?: unknown[] | null;
  last_stop_reason: string | null;
  created_at: string;
  updated_at: string;
}

export interface Grant {
  id: string;
  agent_id: string;
  scope: string;
  decision: string;
  expires_at: string | null;
  constraint: Record<string, unknown> | null;
  created_at: string;
  revoked_at: string | null;
  request_id: string;
}

export interface AuditEntry {
  id: number;
  at: string;
  event: string;
  agent_id: string;
  request_id: string | null;
  grant_id: string | null;
  run_id: string | null;
  tool_call_id: string | null;
  tool_name: string | null;
  scope: string | null;
  decision: string | null;
  reason: string | null;
  actor: string;
  channel: string;
}

export interface Run {
  id: string;
  agent_id: string;
  status: string;
  stop_reason: string | null;
  created_at: string;
  completed_at: string | null;
  usage?: Record<string, number> | null;
}

/** A Letta message (message_type discriminates). */
export type LettaMessage = Record<string, unknown> & { id: string; message_type: string };

/** Any JSON value as text: strings as they are, the rest as JSON (null and undefined as ''). */
export const asText = (v: unknown): string =>
  typeof v === 'string' ? v : v === null || v === undefined ? '' : JSON.stringify(v);
