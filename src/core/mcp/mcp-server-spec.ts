import type { ValidationProblem } from '../rules/validate-tool-rules';
import { referencesOnly } from '../secrets/declared-values';
import { TOOL_SAFETIES, type ToolSafety } from '../tools/tool-definition';

/**
 * An MCP server declaration, in Letta's `/v1/mcp-servers/` shape: `{server_name, config: {mcp_server_type,
 * …}}`, plus our `tool_safety` overrides. Pure: the caller passes the bounds and says who declares it.
 */
export type McpServerType = 'stdio' | 'streamable_http';

export interface McpStdioConfig {
  mcp_server_type: 'stdio';
  command: string;
  args: string[];
  /** Values are `${SECRET}` references (an operator file may also give literals). */
  env: Record<string, string>;
}

export interface McpHttpConfig {
  mcp_server_type: 'streamable_http';
  server_url: string;
  /** Letta's single auth header: name and value (the value a `${SECRET}` reference for tenants). */
  auth_header: string | null;
  auth_token: string | null;
  custom_headers: Record<string, string>;
}

export type McpServerConfig = McpStdioConfig | McpHttpConfig;

export interface McpServerSpec {
  server_name: string;
  config: McpServerConfig;
  /** Per MCP tool name, a safety class that wins over the tool's annotations. */
  tool_safety: Record<string, ToolSafety>;
}

export interface McpDeclarationLimits {
  maxArgs: number;
  maxEntries: number; // env entries, headers, tool_safety entries
  maxStringChars: number;
}

/** Who declares: an operator file (literals allowed, any command) or a tenant over the API. */
export interface McpDeclarer {
  source: 'file' | 'api';
  /** Commands a tenant may run over stdio (`mcp.stdio.allowed_commands`); ignored for files. */
  allowedCommands: readonly string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export const SERVER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/**
 * Environment names a tenant may not set even to its own secret: each changes how the command runs, what
 * its runtime loads or executes first, or where its traffic goes (an allow-listed command need not be an
 * interpreter to run on a JVM, Node, .NET or glibc that obeys these).
 */
const RESERVED_ENV = new RegExp(
  `^(${[
    // the shell and the process's surroundings
    'PATH|HOME|SHELL|USER|LOGNAME|TERM|IFS|ENV|BASH_ENV|SHELLOPTS|BASHOPTS|PS4|PROMPT_COMMAND|CDPATH',
    'ZDOTDIR|TMPDIR|XDG_\\w*',
    // the dynamic loader and the C library
    'LD_\\w*|DYLD_\\w*|GCONV_PATH|GLIBC_TUNABLES|LOCPATH|NLSPATH|MALLOC_\\w*|HOSTALIASES|RES_OPTIONS|LOCALDOMAIN',
    // runtimes and package managers: options, load paths, startup hooks
    'NODE_\\w*|NPM_CONFIG_\\w*|BUN_\\w*|DENO_\\w*|UV_\\w*|PYTHON\\w*|PIP_\\w*|VIRTUAL_ENV|PERL\\w*',
    'RUBY\\w*|GEM_\\w*|BUNDLE_\\w*|LUA_\\w*|PHPRC|PHP_INI_SCAN_DIR|TCLLIBPATH|GIT_\\w*',
    'JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|JAVA_OPTS|JAVA_HOME|CLASSPATH',
    'DOTNET_\\w*|CORECLR_\\w*|COMPLUS_\\w*|GODEBUG|GOFLAGS',
    // where its traffic goes and which certificates it trusts
    '\\w*_PROXY|SSL_CERT_\\w*|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE',
  ].join('|')})$`,
  'i',
);

/** A tenant's value holds references to its secrets, never a secret of its own (it would be stored). */
const LITERAL_REFUSED =
  'must name tenant secrets as ${NAME} (e.g. "Bearer ${API_TOKEN}"); literal text beside them may only be an auth scheme or punctuation: literal values are not stored';

export interface McpSpecResult {
  spec: McpServerSpec | null;
  problems: ValidationProblem[];
  /** Set when the only objection is that a tenant may not run this command (403, not 400). */
  stdioRefused?: string;
}

/**
 * Validates a create body, or an update body merged over the current spec (`current` given: every
 * field optional, `config` replaced key by key within the same `mcp_server_type`, null keeping a key).
 */
export function validateMcpServer(
  input: unknown,
  limits: McpDeclarationLimits,
  who: McpDeclarer,
  current?: McpServerSpec,
): McpSpecResult {
  const problems: ValidationProblem[] = [];
  const bad = (path: string, message: string) => problems.push({ path, message });
  if (!isObj(input))
    return { spec: null, problems: [{ path: '(body)', message: 'must be an object' }] };
  const str = (v: unknown) => typeof v === 'string' && v.length <= limits.maxStringChars;

  const name = input.server_name ?? current?.server_name;
  if (typeof name !== 'string' || !SERVER_NAME.test(name))
    bad('server_name', 'is required: 1 to 64 letters, digits, _ or -');

  let rawConfig: unknown = input.config;
  if (current && rawConfig !== undefined && isObj(rawConfig)) {
    const type = rawConfig.mcp_server_type ?? current.config.mcp_server_type;
    if (type !== current.config.mcp_server_type) {
      const message = `cannot change (the server is ${current.config.mcp_server_type}); create a new server`;
      return { spec: null, problems: [{ path: 'config.mcp_server_type', message }] };
    }
    // as Letta's update, a null field keeps the current value (its SDK sends `command: null`,
    // `server_url: null` for what is not changed)
    const given = Object.entries(rawConfig).filter(([, v]) => v !== null);
    rawConfig = { ...current.config, ...Object.fromEntries(given) };
  } else if (current && rawConfig === undefined) rawConfig = current.config;

  let config: McpServerConfig | null = null;
  let stdioRefused: string | undefined;
  if (!isObj(rawConfig))
    bad('config', 'is required: {mcp_server_type: "stdio" | "streamable_http", …}');
  else if (rawConfig.mcp_server_type === 'stdio') {
    const { command, args = [], env } = rawConfig;
    if (!str(command) || !(command as string).trim())
      bad('config.command', 'is required: a command to run');
    if (!Array.isArray(args) || args.length > limits.maxArgs || !args.every(str))
      bad('config.args', `must be a list of at most ${limits.maxArgs} strings`);
    const envMap = stringMap(env, 'config.env', ENV_NAME, limits, bad);
    if (who.source === 'api') {
      for (const [k, v] of Object.entries(envMap ?? {})) {
        if (RESERVED_ENV.test(k))
          bad(`config.env.${k}`, 'may not be set by a tenant: it changes how the command runs');
        else if (!referencesOnly(v)) bad(`config.env.${k}`, LITERAL_REFUSED);
      }
      if (typeof command === 'string' && !who.allowedCommands.includes(command))
        stdioRefused = `stdio MCP servers run a command on the server's machine; "${command.slice(0, 200)}" is not in mcp.stdio.allowed_commands`;
    }
    if (envMap)
      config = {
        mcp_server_type: 'stdio',
        command: command as string,
        args: args as string[],
        env: envMap,
      };
  } else if (rawConfig.mcp_server_type === 'streamable_http') {
    const { server_url, auth_header = null, auth_token = null, custom_headers } = rawConfig;
    let url: URL | null = null;
    try {
      url = str(server_url) ? new URL(server_url as string) : null;
    } catch {
      url = null;
    }
    if (!url || !['http:', 'https:'].includes(url.protocol))
      bad('config.server_url', 'must be an http:// or https:// URL');
    else if (url.username || url.password)
      bad('config.server_url', 'must not carry credentials; use auth_header and a secret');
    if (auth_header !== null && (typeof auth_header !== 'string' || !HEADER_NAME.test(auth_header)))
      bad('config.auth_header', 'must be a header name');
    if (auth_token !== null && !str(auth_token)) bad('config.auth_token', 'must be a string');
    if ((auth_header === null) !== (auth_token === null))
      bad('config.auth_token', 'auth_header and auth_token go together');
    const headers = stringMap(custom_headers, 'config.custom_headers', HEADER_NAME, limits, bad);
    if (who.source === 'api') {
      const values: [string, unknown][] = [
        ...Object.entries(headers ?? {}).map(([k, v]): [string, unknown] => [
          `config.custom_headers.${k}`,
          v,
        ]),
      ];
      if (auth_token !== null) values.push(['config.auth_token', auth_token]);
      for (const [path, v] of values)
        if (typeof v === 'string' && !referencesOnly(v)) bad(path, LITERAL_REFUSED);
    }
    if (headers)
      config = {
        mcp_server_type: 'streamable_http',
        server_url: server_url as string,
        auth_header: auth_header as string | null,
        auth_token: auth_token as string | null,
        custom_headers: headers,
      };
  } else if (rawConfig.mcp_server_type === 'sse')
    bad('config.mcp_server_type', 'sse is deprecated in MCP; use streamable_http');
  else bad('config.mcp_server_type', 'must be "stdio" or "streamable_http"');

  const rawSafety = input.tool_safety ?? current?.tool_safety ?? {};
  const toolSafety: Record<string, ToolSafety> = {};
  if (!isObj(rawSafety) || Object.keys(rawSafety).length > limits.maxEntries)
    bad('tool_safety', `must map at most ${limits.maxEntries} tool names to a safety class`);
  else
    for (const [k, v] of Object.entries(rawSafety)) {
      if (!TOOL_SAFETIES.includes(v as ToolSafety))
        bad(`tool_safety.${k}`, `must be one of ${TOOL_SAFETIES.join(', ')}`);
      else toolSafety[k] = v as ToolSafety;
    }

  for (const k of Object.keys(input))
    if (!['server_name', 'config', 'tool_safety'].includes(k)) bad(k, 'is not a known field');

  if (problems.length || !config) return { spec: null, problems };
  if (stdioRefused) return { spec: null, problems, stdioRefused };
  return { spec: { server_name: name as string, config, tool_safety: toolSafety }, problems };
}

function stringMap(
  v: unknown,
  path: string,
  key: RegExp,
  limits: McpDeclarationLimits,
  bad: (path: string, message: string) => void,
): Record<string, string> | null {
  if (v === undefined || v === null) return {};
  if (!isObj(v) || Object.keys(v).length > limits.maxEntries) {
    bad(path, `must be an object of at most ${limits.maxEntries} entries`);
    return null;
  }
  let ok = true;
  for (const [k, x] of Object.entries(v)) {
    if (!key.test(k)) {
      bad(`${path}.${k.slice(0, 100)}`, 'is not a valid name');
      ok = false;
    } else if (typeof x !== 'string' || x.length > limits.maxStringChars) {
      bad(`${path}.${k}`, `must be a string of at most ${limits.maxStringChars} characters`);
      ok = false;
    }
  }
  return ok ? (v as Record<string, string>) : null;
}

/** The `${NAME}` references of a config: the secrets a connection needs. */
export function secretNames(config: McpServerConfig): string[] {
  const values =
    config.mcp_server_type === 'stdio'
      ? Object.values(config.env)
      : [
          ...Object.values(config.custom_headers),
          ...(config.auth_token ? [config.auth_token] : []),
        ];
  const out = new Set<string>();
  for (const v of values)
    for (const m of v.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)) out.add(m[1]);
  return [...out];
}
