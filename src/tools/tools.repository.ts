import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { Transactor } from '../database/transactor';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';
import { GLOBAL_TOOL_TENANT, ToolEntity } from './tool.entity';

/** Declared tools: a tenant sees its own (API) tools and the global (file) ones. */
@Injectable()
export class ToolsRepository {
  /** Counts this process's tool writes (each after it is stored): a cached read older than one is stale. */
  private writeCount = 0;

  constructor(
    @InjectRepository(ToolEntity) private readonly repo: Repository<ToolEntity>,
    private readonly tx: Transactor,
  ) {}

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

  listFileTools(): Promise<ToolEntity[]> {
    return this.repo.find({ where: { tenant_id: GLOBAL_TOOL_TENANT, source: 'file' } });
  }

  /** The tools an MCP server contributes (their `mcp.server_id`); few per server, filtered here. */
  async listForMcpServer(tenantId: string, serverId: string): Promise<ToolEntity[]> {
    const rows = await this.repo.find({ where: { tenant_id: tenantId, kind: 'mcp' } });
    return rows.filter((t) => t.mcp?.server_id === serverId);
  }

  /** Inserts a new tool; false when its tenant already has a tool of that name (the unique index decides). */
  async insertIfNameFree(tool: ToolEntity): Promise<boolean> {
    try {
      await answeringConflicts(() => this.repo.insert(tool as QueryDeepPartialEntity<ToolEntity>));
      this.writeCount++;
      return true;
    } catch (e) {
      if (isUniqueViolation(e)) return false;
      throw e;
    }
  }

  /** Inserts or updates a tool (file tools at boot). */
  async save(tool: ToolEntity): Promise<ToolEntity> {
    const saved = await this.tx.run((em) => em.save(ToolEntity, tool));
    this.writeCount++;
    return saved;
  }

  async remove(id: string): Promise<void> {
    await this.repo.delete({ id });
    this.writeCount++;
  }

  /** How many tool writes this process has made; every write of the tools table goes through here. */
  get writes(): number {
    return this.writeCount;
  }
}
