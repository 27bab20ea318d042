import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { conflict, DomainError, notFound, validationFailed } from '../common/domain-error';
import { assertPrefixedId, ID_GENERATOR } from '../common/ids';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { nulBytePaths } from '../core/agents/nul-bytes';
import type { Clock, IdGenerator } from '../core/ports';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { BUILTIN_TOOL_NAMES, BUILTIN_TOOLS, builtinToolId } from './builtin-tools';
import { validateToolDeclaration } from './tool-declaration';
import { GLOBAL_TOOL_TENANT, ToolEntity } from './tool.entity';
import { ToolsRepository } from './tools.repository';
import { readYamlFile, yamlFilesIn } from './yaml-files';

/** A tool as listed: its definition plus where it comes from. */
export interface ToolView extends ToolDefinition {
  id: string;
  source: 'builtin' | 'file' | 'api';
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
});

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
    return (await this.resolveViews(tenantId, toolNames)).map(
      ({ id: _id, source: _s, created_at: _c, updated_at: _u, ...def }) => def,
    );
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
    const nul = nulBytePaths(body);
    if (nul.length) throw validationFailed(nul, 'tool is invalid');
    const { tool, problems } = validateToolDeclaration(body);
    if (!tool) throw validationFailed(problems, 'tool is invalid');
    if (BUILTIN_TOOL_NAMES.has(tool.name))
      throw conflict('TOOL_EXISTS', `"${tool.name}" is a built-in tool`);
    if (
      (await this.tools.findByName(tenantId, tool.name)) ||
      (await this.tools.findByName(GLOBAL_TOOL_TENANT, tool.name))
    )
      throw conflict('TOOL_EXISTS', `a tool named "${tool.name}" already exists`, {
        name: tool.name,
      });
    const now = this.clock.now();
    const saved = await this.tools.save(
      Object.assign(new ToolEntity(), {
        id: this.ids.prefixed('tool'),
        tenant_id: tenantId,
        ...tool,
        http: tool.http ?? null,
        source: 'api',
        created_at: now,
        updated_at: now,
      }),
    );
    return this.toView(saved);
  }

  async delete(tenantId: string, id: string): Promise<void> {
    const view = await this.get(tenantId, id);
    if (view.source !== 'api')
      throw new DomainError(
        'conflict',
        'TOOL_READ_ONLY',
        `"${view.name}" is a ${view.source} tool and cannot be deleted over the API`,
        {
          id,
        },
      );
    await this.tools.remove(id);
  }

  /**
   * Upserts config/tools/*.yaml (each file one tool, or `tools: [...]`) as global tools and removes file
   * tools whose declaration is gone. A broken file stops the boot naming file, field and reason.
   */
  private async loadToolFiles(): Promise<void> {
    const dir = this.config.paths.tools_dir;
    const declared = new Map<string, ToolDefinition>();
    for (const file of yamlFilesIn(dir)) {
      for (const tool of parseToolFile(file)) {
        if (BUILTIN_TOOL_NAMES.has(tool.name) || declared.has(tool.name))
          throw new Error(
            `tool file ${file}: name: "${tool.name}" is declared twice (or is a built-in)`,
          );
        declared.set(tool.name, tool);
      }
    }
    const now = this.clock.now();
    const existing = new Map((await this.tools.listFileTools()).map((t) => [t.name, t]));
    for (const [name, tool] of declared) {
      const old = existing.get(name);
      const next = { ...tool, http: tool.http ?? null };
      if (
        old &&
        JSON.stringify(toDefinition(old)) ===
          JSON.stringify(toDefinition(Object.assign(new ToolEntity(), next)))
      )
        continue;
      await this.tools.save(
        Object.assign(old ?? new ToolEntity(), {
          id: old?.id ?? this.ids.prefixed('tool'),
          tenant_id: GLOBAL_TOOL_TENANT,
          ...next,
          source: 'file',
          created_at: old?.created_at ?? now,
          updated_at: now,
        }),
      );
    }
    for (const [name, old] of existing) if (!declared.has(name)) await this.tools.remove(old.id);
    if (declared.size) this.logger.log(`${declared.size} tool(s) from ${dir}`);
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
export function parseToolFile(file: string): ToolDefinition[] {
  const doc = readYamlFile(file, 'tool');
  const list = doc && typeof doc === 'object' && 'tools' in doc ? doc.tools : undefined;
  const items: unknown[] = list === undefined ? [doc] : Array.isArray(list) ? list : [null];
  return items.map((item, i) => {
    const { tool, problems } = validateToolDeclaration(
      item,
      items.length > 1 || item !== doc ? `tools[${i}]` : '',
    );
    if (!tool)
      throw new Error(
        `tool file ${file}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`,
      );
    return tool;
  });
}
