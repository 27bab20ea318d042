import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { conflict, DomainError, notFound, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR } from '../common/ids';
import { AppConfig, GLOBAL_TOOL_TENANT } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import type { ToolInvoker } from '../core/executor/contracts';
import {
  McpDeclarationLimits,
  McpServerSpec,
  secretNames,
  validateMcpServer,
} from '../core/mcp/mcp-server-spec';
import { mcpToolDefinitions, mcpToolReturn } from '../core/mcp/mcp-tools';
import {
  credentialNamed,
  literalValuesOf,
  referencedValuesOf,
  secretArgsOf,
} from '../core/secrets/declared-values';
import { Redact, redactor } from '../core/secrets/redactor';
import type { Clock, IdGenerator } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { parametersProblem, resolveHeaders } from '../tools/tool-declaration';
import { ToolInvokerService } from '../tools/tool-invoker.service';
import { McpToolSync, ToolsService, ToolView } from '../tools/tools.service';
import { readYamlFile, yamlFilesIn } from '../tools/yaml-files';
import { describe, McpConnections, McpEndpoint, McpUnavailableError } from './mcp-connections';
import { McpServerEntity } from './mcp-server.entity';
import { McpServersRepository } from './mcp-servers.repository';
import { TENANT_SECRETS, TenantSecrets } from './tenant-secrets.port';

type InvokeCtx = Parameters<ToolInvoker['invoke']>[2];
type ToolReturn = { status: 'success' | 'error'; value: string };

/** A server's config could not be turned into a connection (a secret is not set). */
class McpSecretMissing extends Error {}

/**
 * MCP servers of a tenant (API) and of the operator (config/mcp/*.yaml): declarations, their tools kept
 * in step with what the server lists, and the calls the executor makes to them.
 */
@Injectable()
export class McpServersService implements OnModuleInit {
  private readonly log = new Logger('Mcp');
  /**
   * Per server, refreshes run one after another, and one asked for while another waits to start joins it
   * (it lists after the ask anyway): a flood of list_changed is one refresh, not one each.
   */
  private readonly refreshing = new Map<string, RefreshSlot>();

  constructor(
    private readonly servers: McpServersRepository,
    private readonly tools: ToolsService,
    private readonly connections: McpConnections,
    private readonly invoker: ToolInvokerService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    @Inject(TENANT_SECRETS) private readonly secrets: TenantSecrets,
  ) {}

  /** Runs after the tools module loaded its files (it is imported), before agent files name MCP tools. */
  async onModuleInit(): Promise<void> {
    this.invoker.registerMcpCaller((tool, args, ctx) => this.call(tool, args, ctx));
    this.connections.onToolsChanged((serverId) => {
      void this.refresh(serverId).catch((e: unknown) =>
        this.log.warn(`refreshing the tools of MCP server ${serverId} failed: ${describe(e)}`),
      );
    });
    await this.loadServerFiles();
  }

  // ------------------------------------------------------------------ the REST API

  list(tenantId: string): Promise<McpServerEntity[]> {
    return this.servers.listVisible(tenantId);
  }

  async get(tenantId: string, id: string): Promise<McpServerEntity> {
    assertPrefixedId('mcp_server', 'mcp server', id);
    const s = await this.servers.findVisible(tenantId, id);
    if (!s) throw notFound('mcp server', id);
    return s;
  }

  async create(tenantId: string, body: unknown): Promise<McpServerEntity> {
    const spec = this.validate(body);
    if (await this.servers.nameTaken(tenantId, spec.server_name))
      throw serverExists(spec.server_name);
    const now = this.clock.now();
    // a concurrent create of the same name may have won since the check above
    const saved = await this.servers.saveIfNameFree(
      Object.assign(new McpServerEntity(), {
        id: this.ids.prefixed('mcp_server'),
        tenant_id: tenantId,
        ...spec,
        source: 'api',
        created_at: now,
        updated_at: now,
      }),
    );
    if (!saved) throw serverExists(spec.server_name);
    // As Letta does: the server is kept even when its tools cannot be listed yet (refresh retries).
    await this.refresh(saved.id, saved).catch((e: unknown) =>
      this.log.warn(
        `MCP server ${saved.server_name}: tools not listed at creation: ${describe(e)}`,
      ),
    );
    return saved;
  }

  async update(tenantId: string, id: string, body: unknown): Promise<McpServerEntity> {
    const server = this.ownedByTenant(await this.get(tenantId, id));
    const spec = this.validate(body, server);
    if (await this.servers.nameTaken(tenantId, spec.server_name, id))
      throw serverExists(spec.server_name);
    Object.assign(server, spec, { updated_at: Math.max(this.clock.now(), server.updated_at + 1) });
    const saved = await this.servers.saveIfNameFree(server);
    if (!saved) throw serverExists(spec.server_name);
    await this.connections.forget(id);
    await this.refresh(saved.id, saved).catch((e: unknown) =>
      this.log.warn(
        `MCP server ${saved.server_name}: tools not listed after update: ${describe(e)}`,
      ),
    );
    return saved;
  }

  async delete(tenantId: string, id: string): Promise<void> {
    const server = this.ownedByTenant(await this.get(tenantId, id));
    await this.connections.forget(id);
    await this.tools.syncMcpTools(server.tenant_id, id, []);
    await this.servers.remove(id);
  }

  async listTools(tenantId: string, id: string): Promise<ToolView[]> {
    const server = await this.get(tenantId, id);
    return this.tools.mcpTools(server.tenant_id, id);
  }

  /** Lists the server's tools now and brings the tenant's tools in step (Letta's resync). */
  async refreshForTenant(tenantId: string, id: string): Promise<McpToolSync> {
    const server = await this.get(tenantId, id);
    try {
      return await this.refresh(server.id, server);
    } catch (e) {
      if (e instanceof McpSecretMissing)
        throw new DomainError('bad_request', 'MCP_SECRET_MISSING', e.message, { id });
      throw new DomainError(
        'bad_gateway',
        'MCP_SERVER_UNAVAILABLE',
        `MCP server "${server.server_name}" could not list its tools: ${describe(e)}`,
        { id },
      );
    }
  }

  // ------------------------------------------------------------------ tools and calls

  /** Lists the server's tools with the newest declaration given, or (none given) the stored one. */
  private refresh(id: string, server: McpServerEntity | null = null): Promise<McpToolSync> {
    const slot = this.refreshing.get(id);
    if (slot?.waiting) {
      if (server) slot.waiting.server = server;
      return slot.waiting.done;
    }
    const waiting: NonNullable<RefreshSlot['waiting']> = {
      server,
      done: (slot?.tail ?? Promise.resolve())
        .catch(() => undefined)
        .then(async () => {
          next.waiting = null; // started: a later ask waits for this one to end
          const current = waiting.server ?? (await this.servers.findById(id));
          // deleted before it started: nothing to list
          return current
            ? this.listAndSync(current)
            : { added: [], updated: [], deleted: [], skipped: [] };
        }),
    };
    const next: RefreshSlot = { tail: waiting.done, waiting };
    this.refreshing.set(id, next);
    const done = () => {
      if (this.refreshing.get(id) === next) this.refreshing.delete(id);
    };
    waiting.done.then(done, done);
    return waiting.done;
  }

  private async listAndSync(server: McpServerEntity): Promise<McpToolSync> {
    const m = this.config.mcp;
    const { endpoint, redact } = await this.endpoint(server);
    const listed = await this.connections
      .listTools(endpoint, m.max_tools_per_server)
      .catch((e: unknown) => {
        // answered to the tenant (refresh) and logged: a server's error text may echo its settings
        throw new Error(redact(describe(e)));
      });
    const { tools, skipped } = mcpToolDefinitions(
      listed,
      { server_id: server.id, server_name: server.server_name },
      server.tool_safety,
      {
        maxToolsPerServer: m.max_tools_per_server,
        maxSchemaBytes: m.max_tool_schema_bytes,
        maxDescriptionChars: m.max_description_chars,
      },
      parametersProblem,
      redact,
    );
    const sync = await this.tools.syncMcpTools(server.tenant_id, server.id, tools);
    sync.skipped.unshift(...skipped);
    return sync;
  }

  /**
   * One `tools/call` for the executor. Every failure is an error tool return naming the server, never
   * a throw or a hang: the executor's timeout aborts `ctx.signal`, which cancels the request.
   */
  async call(
    tool: ToolDefinition,
    args: Record<string, unknown>,
    ctx: InvokeCtx,
  ): Promise<ToolReturn> {
    const ref = tool.mcp;
    if (!ref) return { status: 'error', value: `tool ${tool.name} has no MCP server` };
    const server = await this.servers.findVisible(ctx.tenantId, ref.server_id);
    const name = server?.server_name ?? ref.server_name;
    const down = (why: string): ToolReturn => ({
      status: 'error',
      value: `[McpServerUnavailable] MCP server "${name}" is not available: ${why}`,
    });
    if (!server) return down('it was deleted');
    // what the call returns, its errors included, never carries a secret value the connection used
    let redact: Redact = (text) => text;
    try {
      const connection = await this.endpoint(server);
      redact = connection.redact;
      const result = await this.connections.callTool(
        connection.endpoint,
        ref.tool,
        args,
        { tool_call_id: ctx.toolCallId, agent_id: ctx.agentId, run_id: ctx.runId },
        ctx.signal,
      );
      return mcpToolReturn(result, this.config.mcp.max_result_bytes, redact);
    } catch (e) {
      if (ctx.signal.aborted) return { status: 'error', value: 'cancelled' };
      if (e instanceof McpUnavailableError || e instanceof McpSecretMissing)
        return down(redact(e.message));
      return {
        status: 'error',
        value: `[McpError] MCP server "${name}" failed the call: ${redact(describe(e))}`,
      };
    }
  }

  /**
   * The connection settings with `${NAME}` resolved at the last moment: a tenant's server from the
   * tenant's secrets only; an operator file from the operator's environment (as http tool headers are).
   * With them, what removes their secret material from anything the server answers: the resolved
   * values, literal header values, credential-named literal env values (`API_KEY: sk-…`) and credential
   * flags' arguments.
   */
  private async endpoint(
    server: McpServerEntity,
  ): Promise<{ endpoint: McpEndpoint; redact: Redact }> {
    const c = server.config;
    const secrets =
      server.source === 'file'
        ? this.config.secrets_env
        : await this.secrets.resolve(server.tenant_id, secretNames(c));
    const resolve = (values: Record<string, string>, what: string) => {
      const r = resolveHeaders(values, secrets);
      if ('missing' in r)
        throw new McpSecretMissing(
          `${what} ${r.header} needs the secret ${r.missing}, which is not set`,
        );
      return r.headers;
    };
    const base = {
      serverId: server.id,
      serverName: server.server_name,
      version: server.updated_at,
    };
    if (c.mcp_server_type === 'stdio')
      return {
        endpoint: {
          ...base,
          transport: {
            type: 'stdio',
            command: c.command,
            args: c.args,
            env: resolve(c.env, 'env'),
          },
        },
        redact: redactor(
          [...literalValuesOf(c.env, credentialNamed), ...secretArgsOf(c.args)],
          referencedValuesOf(c.env, secrets),
        ),
      };
    const headers = {
      ...c.custom_headers,
      ...(c.auth_header && c.auth_token ? { [c.auth_header]: c.auth_token } : {}),
    };
    return {
      endpoint: {
        ...base,
        transport: {
          type: 'streamable_http',
          url: c.server_url,
          headers: resolve(headers, 'header'),
        },
      },
      redact: redactor(literalValuesOf(headers), referencedValuesOf(headers, secrets)),
    };
  }

  // ------------------------------------------------------------------ helpers

  private limits(): McpDeclarationLimits {
    const m = this.config.mcp;
    return { maxArgs: m.max_args, maxEntries: m.max_entries, maxStringChars: m.max_string_chars };
  }

  private validate(body: unknown, current?: McpServerEntity): McpServerSpec {
    const nul = nulBytePaths(body);
    if (nul.length) throw validationFailed(nul, 'mcp server is invalid');
    const r = validateMcpServer(
      body,
      this.limits(),
      { source: 'api', allowedCommands: this.config.mcp.stdio.allowed_commands },
      current,
    );
    if (r.stdioRefused)
      throw new DomainError('forbidden', 'MCP_STDIO_NOT_ALLOWED', r.stdioRefused, {
        setting: 'mcp.stdio.allowed_commands',
      });
    if (!r.spec) throw validationFailed(r.problems, 'mcp server is invalid');
    return r.spec;
  }

  private ownedByTenant(server: McpServerEntity): McpServerEntity {
    if (server.source === 'file')
      throw conflict(
        'MCP_SERVER_READ_ONLY',
        `"${server.server_name}" is declared by the operator (config/mcp) and cannot be changed over the API`,
        { id: server.id },
      );
    return server;
  }

  /**
   * Upserts config/mcp/*.yaml (one server a file, or `servers: [...]`) as global servers, drops file
   * servers whose declaration is gone, and lists each one's tools (a server that cannot be reached
   * keeps its earlier tools and is only logged). A broken file stops the boot naming file and field.
   */
  /** A file server's row; another instance loading the same file at once may have inserted it first. */
  private async saveFileServer(server: McpServerEntity): Promise<McpServerEntity> {
    const saved = await this.servers.saveIfNameFree(server);
    if (saved) return saved;
    const winner = (await this.servers.listFileServers()).find(
      (s) => s.server_name === server.server_name,
    );
    if (!winner) throw serverExists(server.server_name);
    return winner;
  }

  private async loadServerFiles(): Promise<void> {
    const dir = this.config.paths.mcp_dir;
    const declared = new Map<string, McpServerSpec>();
    for (const file of yamlFilesIn(dir)) {
      const doc = readYamlFile(file, 'mcp');
      const list = doc && typeof doc === 'object' && 'servers' in doc ? doc.servers : undefined;
      const items: unknown[] = list === undefined ? [doc] : Array.isArray(list) ? list : [null];
      for (const item of items) {
        const r = validateMcpServer(item, this.limits(), { source: 'file', allowedCommands: [] });
        if (!r.spec)
          throw new Error(
            `mcp file ${file}: ${r.problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
          );
        if (declared.has(r.spec.server_name))
          throw new Error(
            `mcp file ${file}: server_name: "${r.spec.server_name}" is declared twice`,
          );
        declared.set(r.spec.server_name, r.spec);
      }
    }
    const now = this.clock.now();
    const existing = new Map((await this.servers.listFileServers()).map((s) => [s.server_name, s]));
    const current: McpServerEntity[] = [];
    for (const [name, spec] of declared) {
      const old = existing.get(name);
      const same =
        old &&
        JSON.stringify([old.config, old.tool_safety]) ===
          JSON.stringify([spec.config, spec.tool_safety]);
      current.push(
        same
          ? old
          : await this.saveFileServer(
              Object.assign(old ?? new McpServerEntity(), {
                id: old?.id ?? this.ids.prefixed('mcp_server'),
                tenant_id: GLOBAL_TOOL_TENANT,
                ...spec,
                source: 'file',
                created_at: old?.created_at ?? now,
                updated_at: old ? Math.max(now, old.updated_at + 1) : now,
              }),
            ),
      );
    }
    for (const [name, old] of existing)
      if (!declared.has(name)) {
        await this.tools.syncMcpTools(GLOBAL_TOOL_TENANT, old.id, []);
        await this.servers.remove(old.id);
      }
    await Promise.all(
      current.map((s) =>
        this.refresh(s.id, s).catch((e: unknown) =>
          this.log.warn(`MCP server ${s.server_name} (${dir}): tools not listed: ${describe(e)}`),
        ),
      ),
    );
    if (declared.size) this.log.log(`${declared.size} MCP server(s) from ${dir}`);
  }
}

interface RefreshSlot {
  /** The last refresh asked for: the next one starts after it. */
  tail: Promise<unknown>;
  /** That refresh while it has not started: later asks join it. */
  waiting: { server: McpServerEntity | null; done: Promise<McpToolSync> } | null;
}

const serverExists = (name: string) =>
  conflict('MCP_SERVER_EXISTS', `an MCP server named "${name}" exists`, { server_name: name });
