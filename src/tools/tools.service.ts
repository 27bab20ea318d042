import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import {
  conflict,
  DomainError,
  notFound,
  validationFailed,
  ValidationProblem,
} from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR } from '../common/ids';
import { AppConfig, GLOBAL_TOOL_TENANT } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import { ArgumentValidator } from '../core/executor/argument-validator';
import { countProblem } from '../core/limits';
import { canonicalRuleType } from '../core/rules/tool-rule';
import type { StoredToolRule } from '../core/rules/validate-tool-rules';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';
import { unknownToolFileFields } from '../core/tools/tool-file-fields';
import type { Clock, IdGenerator } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { BUILTIN_TOOL_NAMES, BUILTIN_TOOLS, builtinToolId } from './builtin-tools';
import { SecretsService } from '../secrets/secrets.service';
import { keepUnread } from '../core/secrets/declared-values';
import { headerPlaceholders, validateToolDeclaration } from './tool-declaration';
import { ToolEntity } from './tool.entity';
import { ToolsRepository } from './tools.repository';
import { readYamlFile, yamlFilesIn } from './yaml-files';

/** A tool as listed: its definition plus where it comes from. */
export interface ToolView extends ToolDefinition {
  id: string;
  source: 'builtin' | 'file' | 'api' | 'mcp';
  created_at: number | null;
  updated_at: number | null;
}

const toDefinition = (t: ToolEntity): ToolDefinition => ({
  name: t.name,
  description: t.description,
  parameters: t.parameters,
  safety: t.safety,
  kind: t.kind,
  ...(t.http ? { http: t.http } : {}),
  ...(t.mcp ? { mcp: t.mcp } : {}),
  ...(t.tags?.length ? { tags: t.tags } : {}),
  ...(t.return_char_limit ? { return_char_limit: t.return_char_limit } : {}),
  ...(t.default_requires_approval !== null
    ? { default_requires_approval: t.default_requires_approval }
    : {}),
});

/** A definition as a row's columns: what it leaves out is null (an update must clear it too). */
const toColumns = (t: ToolDefinition) => ({
  ...t,
  http: t.http ?? null,
  mcp: t.mcp ?? null,
  tags: t.tags ?? null,
  return_char_limit: t.return_char_limit ?? null,
  default_requires_approval: t.default_requires_approval ?? null,
});

/** What a refresh of an MCP server's tools changed (Letta's resync result, plus what was left out). */
export interface McpToolSync {
  added: string[];
  updated: string[];
  deleted: string[];
  skipped: { name: string; reason: string }[];
}

const BUILTIN_VIEWS: ToolView[] = BUILTIN_TOOLS.map((t) => ({
  ...t,
  id: builtinToolId(t.name),
  source: 'builtin',
  created_at: null,
  updated_at: null,
}));

/** Built-in and declared tools. File tools (config/tools/*.yaml) are global; API tools belong to a tenant. */
@Injectable()
export class ToolsService implements OnModuleInit {
  private readonly logger = new Logger('Tools');

  constructor(
    private readonly tools: ToolsRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
    @Inject(ID_GENERATOR) private readonly ids: IdGenerator,
    private readonly secrets: SecretsService,
  ) {}

  /** Runs before any onApplicationBootstrap, so agent files can name file tools. */
  async onModuleInit(): Promise<void> {
    await this.loadToolFiles();
  }

  async list(tenantId: string): Promise<ToolView[]> {
    const declared = await this.tools.listVisible(tenantId);
    return [...BUILTIN_VIEWS, ...declared.map((t) => this.toView(t))];
  }

  async get(tenantId: string, id: string): Promise<ToolView> {
    assertPrefixedId('tool', 'tool', id);
    const builtin = BUILTIN_VIEWS.find((t) => t.id === id);
    if (builtin) return builtin;
    const t = await this.tools.findVisibleById(tenantId, id);
    if (!t) throw notFound('tool', id);
    return this.toView(t);
  }

  /** Names of every tool a tenant's agents may use. */
  async availableNames(tenantId: string): Promise<Set<string>> {
    const declared = await this.tools.listVisible(tenantId);
    return new Set([...BUILTIN_TOOL_NAMES, ...declared.map((t) => t.name)]);
  }

  /** The definitions behind an agent's tool names, in the agent's order; unknown names are skipped. */
  async resolveAgentTools(tenantId: string, toolNames: string[]): Promise<ToolDefinition[]> {
    // every run (and every consent resumption) resolves its agent's tools: cached where this process is
    // the only writer, until the next tool write
    const defs = await this.tools.cache.read(
      `${tenantId}\u0000${toolNames.join('\u0000')}`,
      async () =>
        (await this.resolveViews(tenantId, toolNames)).map(
          ({ id: _id, source: _s, created_at: _c, updated_at: _u, ...def }) => def,
        ),
    );
    return [...defs];
  }

  /** Like resolveAgentTools, with ids (for API responses). */
  async resolveViews(tenantId: string, toolNames: string[]): Promise<ToolView[]> {
    const wanted = toolNames.filter((n) => !BUILTIN_TOOL_NAMES.has(n));
    const found = await this.tools.findVisibleByNames(tenantId, wanted);
    // A global file tool wins over a tenant tool of the same name (API creation refuses such names).
    const byName = new Map<string, ToolView>();
    for (const t of found)
      if (!byName.has(t.name) || t.tenant_id === GLOBAL_TOOL_TENANT)
        byName.set(t.name, this.toView(t));
    for (const b of BUILTIN_VIEWS) byName.set(b.name, b);
    return toolNames.map((n) => byName.get(n)).filter((t): t is ToolView => t !== undefined);
  }

  async create(tenantId: string, body: unknown): Promise<ToolView> {
    const tool = await this.checkDeclaration(tenantId, body);
    if (BUILTIN_TOOL_NAMES.has(tool.name))
      throw conflict('TOOL_EXISTS', `"${tool.name}" is a built-in tool`);
    if (
      (await this.tools.findByName(tenantId, tool.name)) ||
      (await this.tools.findByName(GLOBAL_TOOL_TENANT, tool.name))
    )
      throw toolExists(tool.name);
    return this.insert(tenantId, tool);
  }

  /**
   * Letta's `PUT /v1/tools/`: the tenant's http tool of that name is updated (same id; the fields given
   * not null, as Letta's upsert, `http` whole), or created. A name held by a built-in, file or MCP tool
   * is 409 TOOL_READ_ONLY: those are not the tenant's to change.
   */
  async upsert(tenantId: string, body: unknown): Promise<ToolView> {
    for (let attempt = 0; ; attempt++) {
      const named = (body as { name?: unknown } | null)?.name;
      const mine = typeof named === 'string' ? await this.tools.findByName(tenantId, named) : null;
      // as Letta's upsert, a tool of that name changes by the fields given not null; the rest stay
      const tool = await this.checkDeclaration(
        tenantId,
        mine?.source === 'api' ? mergePatch(toDefinition(mine), body, 'replace') : body,
      );
      const global = await this.tools.findByName(GLOBAL_TOOL_TENANT, tool.name);
      if (BUILTIN_TOOL_NAMES.has(tool.name) || global)
        throw readOnly(tool.name, BUILTIN_TOOL_NAMES.has(tool.name) ? 'builtin' : 'file');
      if (mine && mine.source !== 'api') throw readOnly(tool.name, mine.source);
      if (mine) return this.replace(tenantId, mine, tool);
      try {
        return await this.insert(tenantId, tool);
      } catch (e) {
        // a concurrent upsert created it since the look-up: update that one (once)
        if (attempt > 0 || !(e instanceof DomainError) || e.code !== 'TOOL_EXISTS') throw e;
      }
    }
  }

  /**
   * Letta's `PATCH /v1/tools/{id}`: the given fields of a tenant's http tool change, the rest stay
   * (`http` merges key by key). Letta's `args_json_schema` and `json_schema` are read as the parameters
   * (and name, description). The agents using the tool must stay valid: see `replace`.
   */
  async update(tenantId: string, id: string, body: unknown): Promise<ToolView> {
    const view = await this.get(tenantId, id);
    if (view.source !== 'api') throw readOnly(view.name, view.source);
    const row = await this.tools.findByName(tenantId, view.name);
    if (!row) throw notFound('tool', id);
    const tool = await this.checkDeclaration(tenantId, mergePatch(toDefinition(row), body));
    if (tool.name !== row.name) {
      if (
        BUILTIN_TOOL_NAMES.has(tool.name) ||
        (await this.tools.findByName(tenantId, tool.name)) ||
        (await this.tools.findByName(GLOBAL_TOOL_TENANT, tool.name))
      )
        throw toolExists(tool.name);
    }
    return this.replace(tenantId, row, tool);
  }

  /** Lets the agents module answer which agents use a tool (the tools module cannot import it). */
  registerUsageSource(fn: ToolUsageSource): void {
    this.usage = fn;
  }

  private usage: ToolUsageSource = () => Promise.resolve([]);

  /**
   * Replaces a stored tool's declaration. Agents name their tools (and rules) by name, so a tool in use
   * keeps its name (409 TOOL_IN_USE), and their `run_first` prefilled arguments must still match the new
   * parameters (409 TOOL_RULES_CONFLICT, naming each agent and rule). Nothing caches tool rows: every run
   * resolves its agent's tools afresh, so the next call sees the new declaration.
   */
  private async replace(
    tenantId: string,
    row: ToolEntity,
    tool: ToolDefinition,
  ): Promise<ToolView> {
    const users = await this.usage(tenantId, row.name);
    if (tool.name !== row.name && users.length)
      throw conflict(
        'TOOL_IN_USE',
        `"${row.name}" is attached to ${users.length} agent(s): detach it before renaming`,
        { name: row.name, agent_ids: users.slice(0, 20).map((u) => u.agent_id) },
      );
    const problems = users.flatMap((u) =>
      u.tool_rules.flatMap((r, i) => {
        const rule = r as Record<string, unknown>;
        if (canonicalRuleType(r.type) !== 'run_first' || rule.tool_name !== row.name) return [];
        const why = args.validate(tool.parameters, (rule.args ?? {}) as Record<string, unknown>);
        return why ? [{ path: `agents.${u.agent_id}.tool_rules[${i}].args`, message: why }] : [];
      }),
    );
    if (problems.length)
      throw conflict(
        'TOOL_RULES_CONFLICT',
        `the new parameters of "${row.name}" do not accept the prefilled arguments of its run_first rules`,
        { problems: problems.slice(0, 50) },
      );
    // a client that sends the tool back as it read it (header values shown [redacted]) keeps them
    const { http } = tool;
    const next =
      http?.headers && row.http?.headers
        ? { ...tool, http: { ...http, headers: keepUnread(http.headers, row.http.headers) } }
        : tool;
    Object.assign(row, { ...toColumns(next), updated_at: this.clock.now() });
    try {
      await answeringConflicts(() => this.tools.save(row));
    } catch (e) {
      if (isUniqueViolation(e)) throw toolExists(tool.name);
      throw e;
    }
    return this.toView(row);
  }

  /** Validates a tenant's declaration; its `${NAME}` headers must be the tenant's secrets or allow-listed. */
  private async checkDeclaration(tenantId: string, body: unknown): Promise<ToolDefinition> {
    const nul = nulBytePaths(body);
    if (nul.length) throw validationFailed(nul, 'tool is invalid');
    const { tool, problems } = validateToolDeclaration(body, this.config.limits);
    const tooMany = countProblem(
      'tags',
      tool?.tags?.length ?? 0,
      'max_tags_per_agent',
      this.config.limits,
    );
    if (tooMany) throw validationFailed([tooMany], 'tool is invalid');
    if (!tool) throw validationFailed(problems, 'tool is invalid');
    // `${NAME}` must be the tenant's own secret or an allow-listed variable: never the operator's environment
    const placeholders = headerPlaceholders(tool.http?.headers);
    const why = await this.secrets.refusalsFor(tenantId, [
      ...new Set(placeholders.map((p) => p.name)),
    ]);
    const refused: ValidationProblem[] = placeholders.flatMap(({ header, name }) =>
      why.has(name) ? [{ path: `http.headers.${header}`, message: why.get(name)! }] : [],
    );
    if (refused.length) throw validationFailed(refused, 'tool is invalid');
    return tool;
  }

  private async insert(tenantId: string, tool: ToolDefinition): Promise<ToolView> {
    const now = this.clock.now();
    const row = Object.assign(new ToolEntity(), {
      id: this.ids.prefixed('tool'),
      tenant_id: tenantId,
      ...toColumns(tool),
      source: 'api',
      created_at: now,
      updated_at: now,
    });
    // a concurrent create of the same name may have won since the check above
    if (!(await this.tools.insertIfNameFree(row))) throw toolExists(tool.name);
    return this.toView(row);
  }

  /**
   * Makes the tenant's `mcp` tools of one server exactly `defs`: adds, updates, deletes. A name another
   * tool already has (built-in, file, http or another server's) is skipped with the reason, never replaced.
   */
  async syncMcpTools(
    tenantId: string,
    serverId: string,
    defs: ToolDefinition[],
  ): Promise<McpToolSync> {
    const mine = new Map(
      (await this.tools.listForMcpServer(tenantId, serverId)).map((t) => [t.name, t]),
    );
    const others = new Set(
      (
        await this.tools.findVisibleByNames(
          tenantId,
          defs.map((d) => d.name),
        )
      )
        .filter((t) => !(t.tenant_id === tenantId && t.mcp?.server_id === serverId))
        .map((t) => t.name),
    );
    const out: McpToolSync = { added: [], updated: [], deleted: [], skipped: [] };
    const now = this.clock.now();
    const keep = new Set<string>();
    for (const def of defs) {
      if (BUILTIN_TOOL_NAMES.has(def.name) || others.has(def.name)) {
        out.skipped.push({ name: def.name, reason: 'another tool of this tenant has the name' });
        continue;
      }
      keep.add(def.name);
      const old = mine.get(def.name);
      const next = toColumns(def);
      if (old && JSON.stringify(toDefinition(old)) === JSON.stringify(def)) continue;
      const row = Object.assign(old ?? new ToolEntity(), {
        id: old?.id ?? this.ids.prefixed('tool'),
        tenant_id: tenantId,
        ...next,
        source: 'mcp',
        created_at: old?.created_at ?? now,
        updated_at: now,
      });
      if (old) await this.tools.save(row);
      else if (!(await this.tools.insertIfNameFree(row))) {
        // a tool of this name was created since the check above
        out.skipped.push({ name: def.name, reason: 'another tool of this tenant has the name' });
        continue;
      }
      (old ? out.updated : out.added).push(def.name);
    }
    for (const [name, old] of mine)
      if (!keep.has(name)) {
        await this.tools.remove(old.id);
        out.deleted.push(name);
      }
    return out;
  }

  /** The tenant's tools of one MCP server, as listed. */
  async mcpTools(tenantId: string, serverId: string): Promise<ToolView[]> {
    const rows = await this.tools.listForMcpServer(tenantId, serverId);
    return rows.sort((a, b) => a.name.localeCompare(b.name)).map((t) => this.toView(t));
  }

  async delete(tenantId: string, id: string): Promise<void> {
    const view = await this.get(tenantId, id);
    if (view.source !== 'api') throw readOnly(view.name, view.source);
    await this.tools.remove(id);
  }

  /**
   * Upserts config/tools/*.yaml (each file one tool, or `tools: [...]`) as global tools and removes file
   * tools whose declaration is gone. A broken file stops the boot naming file, field and reason.
   */
  private async loadToolFiles(): Promise<void> {
    const dir = this.config.paths.tools_dir;
    const declared = new Map<string, ToolDefinition>();
    const fileOf = new Map<string, string>();
    for (const file of yamlFilesIn(dir)) {
      for (const tool of parseToolFile(file, this.config.limits)) {
        fileOf.set(tool.name, file);
        for (const { header, name } of headerPlaceholders(tool.http?.headers)) {
          const why = this.secrets.refusalForOperator(name);
          if (why)
            throw new Error(`tool file ${file}: ${tool.name}: http.headers.${header} ${why}`);
        }
        if (BUILTIN_TOOL_NAMES.has(tool.name) || declared.has(tool.name))
          throw new Error(
            `tool file ${file}: name: "${tool.name}" is declared twice (or is a built-in)`,
          );
        declared.set(tool.name, tool);
      }
    }
    const now = this.clock.now();
    const existing = new Map((await this.tools.listFileTools()).map((t) => [t.name, t]));
    for (const [name, tool] of declared)
      await this.upsertFileTool(tool, existing.get(name) ?? null, now);
    for (const [name, old] of existing) if (!declared.has(name)) await this.tools.remove(old.id);
    if (declared.size) this.logger.log(`${declared.size} tool(s) from ${dir}`);
    // an agent names its tools by name and the operator's tool wins: the tenant's stops being used
    for (const t of await this.tools.tenantToolsNamed([...declared.keys()]))
      this.logger.warn(
        `tool file ${fileOf.get(t.name)}: tool "${t.name}" has the name of tenant ${t.tenant_id}'s own tool ${t.id} (${t.source}); that tenant's agents call the file's tool, which wins over a tenant's tool of the same name`,
      );
  }

  /**
   * One file tool, inserted or updated. Instances booting at once insert the same tools: the unique
   * index lets one insert win, and the others compare against (and update) the winner's row.
   */
  private async upsertFileTool(
    tool: ToolDefinition,
    old: ToolEntity | null,
    now: number,
  ): Promise<void> {
    const next = toColumns(tool);
    if (
      old &&
      JSON.stringify(toDefinition(old)) ===
        JSON.stringify(toDefinition(Object.assign(new ToolEntity(), next)))
    )
      return;
    const row = Object.assign(old ?? new ToolEntity(), {
      id: old?.id ?? this.ids.prefixed('tool'),
      tenant_id: GLOBAL_TOOL_TENANT,
      ...next,
      source: 'file',
      created_at: old?.created_at ?? now,
      updated_at: now,
    });
    if (old) await this.tools.save(row);
    else if (!(await this.tools.insertIfNameFree(row))) {
      const winner = await this.tools.findByName(GLOBAL_TOOL_TENANT, tool.name);
      if (!winner) throw toolExists(tool.name);
      await this.upsertFileTool(tool, winner, now);
    }
  }

  private toView(t: ToolEntity): ToolView {
    return {
      ...toDefinition(t),
      id: t.id,
      source: t.source,
      created_at: t.created_at,
      updated_at: t.updated_at,
    };
  }
}

/** Reads one tool file; throws an Error naming the file, the field and the reason. */
export function parseToolFile(
  file: string,
  limits: Parameters<typeof validateToolDeclaration>[1],
): ToolDefinition[] {
  const doc = readYamlFile(file, 'tool');
  const list = doc && typeof doc === 'object' && 'tools' in doc ? doc.tools : undefined;
  const items: unknown[] = list === undefined ? [doc] : Array.isArray(list) ? list : [null];
  const unknownKeys = unknownToolFileFields(doc);
  if (unknownKeys.length)
    throw new Error(
      `tool file ${file}: ${unknownKeys.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
    );
  return items.map((item, i) => {
    const { tool, problems } = validateToolDeclaration(
      item,
      limits,
      items.length > 1 || item !== doc ? `tools[${i}]` : '',
    );
    if (!tool)
      throw new Error(
        `tool file ${file}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
      );
    return tool;
  });
}

const toolExists = (name: string) =>
  conflict('TOOL_EXISTS', `a tool named "${name}" already exists`, { name });

const readOnly = (name: string, source: ToolView['source']) =>
  conflict(
    'TOOL_READ_ONLY',
    `"${name}" is a ${source} tool and cannot be changed or deleted over the API`,
    { name, source },
  );

/** Validates prefilled run_first arguments against a changed tool's parameters. */
const args = new ArgumentValidator(100);

/** Which of a tenant's agents use a tool (by name), with their rules. */
export type ToolUsageSource = (
  tenantId: string,
  toolName: string,
) => Promise<{ agent_id: string; tool_rules: StoredToolRule[] }[]>;

/**
 * A PATCH (or an upsert's) body over a stored declaration: fields given not null replace, as Letta's
 * ToolUpdate; `http` merges key by key on a PATCH and is replaced whole by an upsert. Letta's
 * `json_schema` ({name, description, parameters}) and `args_json_schema` are read as our fields.
 */
function mergePatch(
  current: ToolDefinition,
  body: unknown,
  http: 'merge' | 'replace' = 'merge',
): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const b = body as Record<string, unknown>;
  const json = (
    typeof b.json_schema === 'object' && b.json_schema !== null ? b.json_schema : {}
  ) as Record<string, unknown>;
  const pick = (...vs: unknown[]) => vs.find((v) => v !== undefined && v !== null);
  const { mcp: _mcp, ...base } = current;
  return {
    ...base,
    ...(b.source_code != null ? { source_code: b.source_code } : {}),
    name: pick(b.name, json.name, current.name),
    description: pick(b.description, json.description, current.description),
    parameters: pick(b.parameters, b.args_json_schema, json.parameters, current.parameters),
    safety: pick(b.safety, current.safety),
    kind: pick(b.kind, current.kind),
    tags: pick(b.tags, current.tags),
    return_char_limit: pick(b.return_char_limit, current.return_char_limit),
    default_requires_approval: pick(b.default_requires_approval, current.default_requires_approval),
    http:
      http === 'merge' && typeof b.http === 'object' && b.http !== null && !Array.isArray(b.http)
        ? { ...current.http, ...(b.http as Record<string, unknown>) }
        : pick(b.http, current.http),
  };
}
