import type { ValidationProblem } from './rules/validate-tool-rules';

/**
 * Bounds on what a tenant declares (config `limits.*`; docs/security.md lists each with its answer).
 * Counts past a bound are `LIMIT_EXCEEDED` problems; durations out of range are plain validation problems.
 */
export interface InputLimits {
  /** Rule `seconds` / `window_seconds` and grant `seconds` (ten years by default). */
  max_duration_seconds: number;
  max_tags_per_agent: number;
  max_tools_per_agent: number;
  max_rules_per_agent: number;
  max_memory_blocks_per_agent: number;
  /** A memory block's `limit` (so its value) in characters. */
  max_block_chars: number;
  /** Values in one list filter (`GET /v1/agents/?tags=…`): each is an SQL variable. */
  max_filter_values: number;
  /** An archival memory passage's text, in characters. */
  max_passage_chars: number;
  /** A passage's tags (and the tags of one passage search). */
  max_tags_per_passage: number;
  /** Passages one request creates (`archives.passages.createMany`). */
  max_passages_per_request: number;
  /** Results of one archival search or passage list (`limit`, `top_k`). */
  max_search_results: number;
  /** Items of one page of any other list (`limit` of agents, messages, runs, grants, audit, …). */
  max_page_size: number;
  /**
   * The estimated size (`approxBytes`) of one page of any list, its items together: past it the page ends
   * early (a shorter page, at least one item), before it is read whole or written out.
   */
  max_page_bytes: number;
  /** Conversations (created or forked) of one agent, besides its default one. */
  max_conversations_per_agent: number;
  /** A declared tool's `description`, in characters (API and config/tools files alike). */
  max_tool_description_chars: number;
  /** A declared tool's `parameters` schema, as JSON, in bytes. */
  max_tool_parameters_bytes: number;
  /** Headers of a declared http tool (each `${NAME}` in them is looked up when it is declared). */
  max_tool_headers: number;
  /** One header value of a declared http tool, as written (its `${NAME}` references unresolved). */
  max_tool_header_value_chars: number;
  /**
   * Tool calls one model step may ask for (a model's answer, a turn of an agent's `model_script`): each
   * call is run, stored twice and answered, so 3,000 calls of one scripted turn were a 2.7 MB answer.
   */
  max_tool_calls_per_step: number;
  /** Messages of an agent's `initial_message_sequence` (its starting history, given on create). */
  max_initial_messages: number;
  /**
   * Subschema evaluations one value may cost a JSON Schema (tool parameters, MCP input schemas, grant
   * constraints), `$ref` and `anyOf`/`oneOf`/`allOf` branches unfolded: a larger schema is refused.
   */
  max_schema_expansion: number;
  /**
   * One substring search (conversation_search, `POST /v1/messages/search`, an agent's message search,
   * `GET /v1/blocks/?value_search=`) looks at the newest this-many rows of its scope …
   */
  search_scan_rows: number;
  /** … and at the first this-many characters of each. */
  search_scan_chars: number;
}

/** A list longer than its bound; `setting` names the key under `limits`. */
export function countProblem<K extends keyof InputLimits>(
  path: string,
  count: number,
  setting: K,
  limits: Pick<InputLimits, K>,
): ValidationProblem | null {
  const max = limits[setting];
  if (count <= max) return null;
  return {
    path,
    message: `has ${count} items; at most ${max} (limits.${setting})`,
    limit: `limits.${setting}`,
  };
}

/**
 * A duration in whole seconds within `min` … `limits.max_duration_seconds`: finite, so it can never
 * reach SQL as Infinity, and long enough to mean something (a grant of 1e-300 s was expired at birth).
 */
export function durationProblem(
  v: unknown,
  path: string,
  limits: Pick<InputLimits, 'max_duration_seconds'>,
  min = 1,
): ValidationProblem | null {
  const max = limits.max_duration_seconds;
  if (typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max) return null;
  return { path, message: `must be a whole number of seconds from ${min} to ${max}` };
}

/**
 * A list's `limit` (query text, or a JSON number in a body): a whole number from 1 to `limits[setting]`.
 * Absent: `fallback`, capped by the bound. Past it or not a whole number: a problem at `path`.
 */
export function readLimit<K extends 'max_page_size' | 'max_search_results'>(
  raw: unknown,
  fallback: number,
  setting: K,
  limits: Pick<InputLimits, K>,
  problems: ValidationProblem[],
  path = 'limit',
): number {
  const max = limits[setting];
  const v = Array.isArray(raw) ? (raw as unknown[])[raw.length - 1] : raw;
  if (v === undefined || v === null || v === '') return Math.min(fallback, max);
  const n = typeof v === 'number' || typeof v === 'string' ? Number(v) : NaN;
  if (Number.isInteger(n) && n >= 1 && n <= max) return n;
  problems.push({ path, message: `must be a whole number from 1 to ${max} (limits.${setting})` });
  return Math.min(fallback, max);
}

/** An ISO 8601 date or date-time (query text or JSON) as epoch ms; absent or empty: null. */
export function readInstant(
  v: unknown,
  path: string,
  problems: ValidationProblem[],
): number | null {
  if (v === undefined || v === null || v === '') return null;
  const ms = typeof v === 'string' && v.length <= 64 ? Date.parse(v) : NaN;
  if (Number.isNaN(ms)) {
    problems.push({ path, message: 'must be an ISO 8601 date or date-time' });
    return null;
  }
  return ms;
}
