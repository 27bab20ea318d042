import { Inject, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Not, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { type AppConfig, GLOBAL_TOOL_TENANT } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { ToolDefinition } from '../core/tools/tool-definition';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';
import { WriteCountedCache } from '../database/write-counted-cache';
import { ToolEntity } from './tool.entity';

/** Declared tools: a tenant sees its own (API) tools and the global (file) ones. */
@Injectable()
export class ToolsRepository {
  /**
   * Reads derived from the tools table (an agent's resolved tools, read by every run and every consent
   * resumption); every write below goes through it.
   */
  readonly cache: WriteCountedCache<ToolDefinition[]>;

  constructor(
    @InjectRepository(ToolEntity) private readonly repo: Repository<ToolEntity>,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.cache = new WriteCountedCache(!config.database.url, config.database.record_cache_bytes);
  }

  listVisible(tenantId: string): Promise<ToolEntity[]> {
    return this.repo.find({
      where: { tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]) },
      order: { name: 'ASC' },
    });
  }

  findVisibleById(tenantId: string, id: string): Promise<ToolEntity | null> {
    return this.repo.findOne({ where: { id, tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]) } });
  }

  findVisibleByNames(tenantId: string, names: string[]): Promise<ToolEntity[]> {
    if (names.length === 0) return Promise.resolve([]);
    return this.repo.find({
      where: { tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]), name: In(names) },
    });
  }

  findByName(tenantId: string, name: string): Promise<ToolEntity | null> {
    return this.repo.findOne({ where: { tenant_id: tenantId, name } });
  }

  /** Tenants' own tools (API, MCP) that have one of these names. */
  tenantToolsNamed(names: string[]): Promise<ToolEntity[]> {
    if (names.length === 0) return Promise.resolve([]);
    return this.repo.find({
      where: { tenant_id: Not(GLOBAL_TOOL_TENANT), name: In(names) },
      order: { tenant_id: 'ASC', name: 'ASC' },
    });
  }

  listFileTools(): Promise<ToolEntity[]> {
    return this.repo.find({ where: { tenant_id: GLOBAL_TOOL_TENANT, source: 'file' } });
  }

  /** The tools an MCP server contributes (their `mcp.server_id`); few per server, filtered here. */
  async listForMcpServer(tenantId: string, serverId: string): Promise<ToolEntity[]> {
    const rows = await this.repo.find({ where: { tenant_id: tenantId, kind: 'mcp' } });
    return rows.filter((t) => t.mcp?.server_id === serverId);
  }

  /**
   * Inserts a new tool; false when its tenant already has a tool of that name (the unique index decides).
   * A tool declared over the API must fit the tenant's quota (409 QUOTA_EXCEEDED, nothing written).
   */
  async insertIfNameFree(tool: ToolEntity): Promise<boolean> {
    try {
      await this.cache.write(() =>
        answeringConflicts(() =>
          this.tx.run(async (em) => {
            await em.insert(ToolEntity, tool as QueryDeepPartialEntity<ToolEntity>);
            await this.quotas.assertWithin(
              em,
              tool.tenant_id,
              'tools',
              tool.source === 'api' ? 1 : 0,
            );
          }),
        ),
      );
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  /** Inserts or updates a tool (file tools at boot). */
  save(tool: ToolEntity): Promise<ToolEntity> {
    return this.cache.write(() => this.tx.run((em) => em.save(ToolEntity, tool)));
  }

  async remove(id: string): Promise<void> {
    await this.cache.write(() => this.repo.delete({ id }));
  }
}
