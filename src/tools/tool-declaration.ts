import {
  MAX_RETURN_CHAR_LIMIT,
  TOOL_SAFETIES,
  type HttpToolSpec,
  type ToolDefinition,
  type ToolSafety,
} from '../core/tools/tool-definition';
import type { ValidationProblem } from '../common/domain-error';
import type { InputLimits } from '../core/limits';
import { describeProblems, SchemaCompiler } from '../core/schemas/schema-compiler';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const HTTP_METHODS: readonly HttpToolSpec['method'][] = [
  'GET',
  'POST',
  'PUT',
  'PATCH',
  'DELETE',
];
/** What OpenAI accepts as a function name. */
export const TOOL_NAME = /^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$/;
/** A header value is literal text, or exactly one `${ENV_NAME}` placeholder somewhere inside it. */
const ENV_REF = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Valid tokens, but names a header map looked up by name would find on every object (or set its prototype). */
const OBJECT_NAMES = new Set(['__proto__', 'constructor', 'prototype']);
/** A tag's length, as an agent's. */
const MAX_TAG = 200;

/** Declaration only checks that a schema compiles: nothing needs to stay cached. */
const schemas = new SchemaCompiler({ strict: false, allErrors: true }, 100);

/**
 * Validates a tool declaration (from a YAML file or POST /v1/tools/). Only `http` tools can be declared;
 * built-ins live in code. The `parameters` schema must compile. Header values keep their `${ENV}`
 * placeholders: they are resolved only when a call is sent. The description and schema are bounded
 * (`limits`), operator files included: both are listed to tenants and sent to the model with every call.
 */
export function validateToolDeclaration(
  input: unknown,
  limits: Pick<
    InputLimits,
    | 'max_tool_description_chars'
    | 'max_tool_parameters_bytes'
    | 'max_tool_headers'
    | 'max_tool_header_value_chars'
  >,
  basePath = '',
): { tool: ToolDefinition | null; problems: ValidationProblem[] } {
  const problems: ValidationProblem[] = [];
  const p = (field: string) => (basePath ? `${basePath}.${field}` : field);
  const bad = (field: string, message: string) => problems.push({ path: p(field), message });
  if (!isObj(input))
    return { tool: null, problems: [{ path: basePath || '(body)', message: 'must be an object' }] };

  const { name, parameters, safety, kind, http, tags, return_char_limit } = input;
  // null is not given, as in Letta's ToolCreate (a client sending its whole model sends them)
  const description = input.description ?? '';
  const approval = input.default_requires_approval;
  // Letta's Python tools: said alone, since the rest of the declaration is beside the point (null is
  // what a tool here answers, so a tool sent back as it was read passes)
  if (input.source_code != null)
    return {
      tool: null,
      problems: [
        {
          path: p('source_code'),
          message:
            'is not supported: this server runs no tenant code; declare an http tool ({kind: "http", http: {url, method}, safety, parameters}) or connect an MCP server (/v1/mcp-servers)',
        },
      ],
    };
  if (typeof name !== 'string' || !TOOL_NAME.test(name))
    bad('name', 'is required: letters, digits, _ or -, starting with a letter or _, at most 64');
  if (typeof description !== 'string') bad('description', 'must be a string');
  else if (description.length > limits.max_tool_description_chars)
    bad(
      'description',
      `must be at most ${limits.max_tool_description_chars} characters (limits.max_tool_description_chars)`,
    );
  let params: Obj = { type: 'object', properties: {} };
  if (parameters != null) {
    if (!isObj(parameters)) bad('parameters', 'must be a JSON Schema object');
    else if (Buffer.byteLength(JSON.stringify(parameters)) > limits.max_tool_parameters_bytes)
      bad(
        'parameters',
        `must be at most ${limits.max_tool_parameters_bytes} bytes as JSON (limits.max_tool_parameters_bytes)`,
      );
    else if (parameters.type !== 'object')
      bad('parameters.type', 'must be "object": tools take named arguments');
    else {
      const compiled = schemas.compile(parameters, p('parameters'));
      if (compiled.ok) params = parameters;
      else problems.push(...compiled.problems);
    }
  }
  if (!TOOL_SAFETIES.includes(safety as ToolSafety))
    bad('safety', `must be one of ${TOOL_SAFETIES.join(', ')}`);
  if (kind !== 'http')
    bad(
      'kind',
      kind === 'builtin' ? 'builtin tools are declared in code, not here' : 'must be "http"',
    );
  // counted first: each `${NAME}` of a header is looked up when the tool is declared
  const headers = isObj(http) && isObj(http.headers) ? Object.keys(http.headers).length : 0;
  if (headers > limits.max_tool_headers)
    problems.push({
      path: p('http.headers'),
      message: `has ${headers} headers; at most ${limits.max_tool_headers} (limits.max_tool_headers)`,
      limit: 'limits.max_tool_headers',
    });
  const spec =
    kind === 'http' && headers <= limits.max_tool_headers
      ? validateHttpSpec(http, limits.max_tool_header_value_chars, (f, m) => bad(`http${f}`, m))
      : null;
  if (tags != null) {
    if (!Array.isArray(tags)) bad('tags', 'must be a list of strings');
    else
      tags.forEach((t, i) => {
        if (typeof t !== 'string' || t === '' || t.length > MAX_TAG)
          bad(`tags[${i}]`, `must be a string of 1 to ${MAX_TAG} characters`);
      });
  }
  if (
    return_char_limit != null &&
    (!Number.isInteger(return_char_limit) ||
      (return_char_limit as number) < 1 ||
      (return_char_limit as number) > MAX_RETURN_CHAR_LIMIT)
  )
    bad('return_char_limit', `must be a whole number from 1 to ${MAX_RETURN_CHAR_LIMIT}`);
  if (approval != null && typeof approval !== 'boolean')
    bad('default_requires_approval', 'must be true, false or null');

  if (problems.length) return { tool: null, problems };
  return {
    tool: {
      name: name as string,
      description: description as string,
      parameters: params,
      safety: safety as ToolSafety,
      kind: 'http',
      http: spec!,
      ...(Array.isArray(tags) && tags.length ? { tags: [...new Set(tags as string[])] } : {}),
      ...(return_char_limit != null ? { return_char_limit: return_char_limit as number } : {}),
      ...(typeof approval === 'boolean' ? { default_requires_approval: approval } : {}),
    },
    problems,
  };
}

/** `null` when a tool's parameters schema compiles; else why not (MCP tools: one line per tool). */
export function parametersProblem(parameters: Record<string, unknown>): string | null {
  const compiled = schemas.compile(parameters);
  return compiled.ok ? null : describeProblems(compiled.problems);
}

function validateHttpSpec(
  input: unknown,
  maxHeaderValue: number,
  bad: (field: string, message: string) => void,
): HttpToolSpec | null {
  if (!isObj(input)) {
    bad('', 'is required for kind http: {url, method, headers?, timeout_ms?}');
    return null;
  }
  const { url, method = 'POST', headers, timeout_ms } = input;
  let ok = true;
  const fail = (f: string, m: string) => {
    ok = false;
    bad(f, m);
  };
  let parsed: URL | null = null;
  try {
    parsed = typeof url === 'string' ? new URL(url) : null;
  } catch {
    parsed = null;
  }
  if (!parsed || !['http:', 'https:'].includes(parsed.protocol))
    fail('.url', 'must be an http:// or https:// URL');
  // a tool's URL is shown (to every tenant, for a tool file) and exported: credentials go in a header
  else if (parsed.username || parsed.password)
    fail(
      '.url',
      'must not carry credentials (a user or password): send them in a header from a secret, e.g. Authorization: Basic ${CREDENTIALS}',
    );
  const m = typeof method === 'string' ? method.toUpperCase() : method;
  if (!HTTP_METHODS.includes(m as HttpToolSpec['method']))
    fail('.method', `must be one of ${HTTP_METHODS.join(', ')}`);
  if (headers !== undefined && headers !== null) {
    if (!isObj(headers)) fail('.headers', 'must be an object of header name → value');
    else
      for (const [k, v] of Object.entries(headers)) {
        if (!HEADER_NAME.test(k)) fail(`.headers.${k}`, 'is not a valid header name');
        else if (OBJECT_NAMES.has(k.toLowerCase()))
          fail(`.headers.${k}`, 'is a name every JavaScript object has: not a header name here');
        else if (typeof v !== 'string')
          fail(`.headers.${k}`, 'must be a string (use ${ENV_NAME} for secrets)');
        // every call sends it, and each of its ${NAME} is looked up when the tool is declared
        else if (v.length > maxHeaderValue)
          fail(
            `.headers.${k}`,
            `must be at most ${maxHeaderValue} characters (limits.max_tool_header_value_chars)`,
          );
        // eslint-disable-next-line no-control-regex
        else if (/[\x00-\x08\x0a-\x1f\x7f]/.test(v))
          fail(`.headers.${k}`, 'must not hold control characters (line breaks among them)');
      }
  }
  if (timeout_ms !== undefined && timeout_ms !== null) {
    if (
      typeof timeout_ms !== 'number' ||
      !Number.isInteger(timeout_ms) ||
      timeout_ms < 1 ||
      timeout_ms > 3_600_000
    )
      fail('.timeout_ms', 'must be a whole number of milliseconds from 1 to 3600000');
  }
  if (!ok) return null;
  return {
    url: url as string,
    method: m as HttpToolSpec['method'],
    ...(headers ? { headers: headers as Record<string, string> } : {}),
    ...(typeof timeout_ms === 'number' ? { timeout_ms } : {}),
  };
}

/** The `${NAME}` placeholders of header values, with the header each is in. */
export function headerPlaceholders(
  headers: Record<string, string> | undefined,
): { header: string; name: string }[] {
  return Object.entries(headers ?? {}).flatMap(([header, v]) =>
    [...v.matchAll(ENV_REF)].map((m) => ({ header, name: m[1] })),
  );
}

/** Resolves `${NAME}` placeholders from the configured secrets; names the first one missing (never a value). */
export function resolveHeaders(
  headers: Record<string, string> | undefined,
  secrets: Record<string, string>,
): { headers: Record<string, string> } | { missing: string; header: string } {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    let missing: string | null = null;
    out[k] = v.replace(ENV_REF, (_m, envName: string) => {
      // own names only: `${constructor}` must not find Object's
      const s = Object.hasOwn(secrets, envName) ? secrets[envName] : undefined;
      if (s === undefined) missing ??= envName;
      return s ?? '';
    });
    if (missing) return { missing, header: k };
  }
  return { headers: out };
}
