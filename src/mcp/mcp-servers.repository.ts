import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { GLOBAL_TOOL_TENANT } from '../config/app-config';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { answeringConflicts, isUniqueViolation } from '../database/unique-violation';
import { McpServerEntity } from './mcp-server.entity';

/** MCP servers: a tenant sees its own (API) servers and the global (file) ones. */
@Injectable()
export class McpServersRepository {
  constructor(
    @InjectRepository(McpServerEntity) private readonly repo: Repository<McpServerEntity>,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
  ) {}

  listVisible(tenantId: string): Promise<McpServerEntity[]> {
    return this.repo.find({
      where: { tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]) },
      order: { server_name: 'ASC' },
    });
  }

  findVisible(tenantId: string, id: string): Promise<McpServerEntity | null> {
    return this.repo.findOne({ where: { id, tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]) } });
  }

  findById(id: string): Promise<McpServerEntity | null> {
    return this.repo.findOne({ where: { id } });
  }

  /** A server of this name the tenant would see (its own or a global one), other than `exceptId`. */
  async nameTaken(tenantId: string, name: string, exceptId?: string): Promise<boolean> {
    const found = await this.repo.find({
      where: { tenant_id: In([tenantId, GLOBAL_TOOL_TENANT]), server_name: name },
    });
    return found.some((s) => s.id !== exceptId);
  }

  listFileServers(): Promise<McpServerEntity[]> {
    return this.repo.find({ where: { tenant_id: GLOBAL_TOOL_TENANT, source: 'file' } });
  }

  /**
   * Inserts or updates a server; null when another server of the tenant has its name (the unique index
   * decides). A new server declared over the API must fit the tenant's quota (409 QUOTA_EXCEEDED).
   */
  async saveIfNameFree(server: McpServerEntity): Promise<McpServerEntity | null> {
    try {
      return await answeringConflicts(() =>
        this.tx.run(async (em) => {
          const created = !(await em.existsBy(McpServerEntity, { id: server.id }));
          const saved = await em.save(McpServerEntity, server);
          if (server.source === 'api' && created)
            await this.quotas.assertWithin(em, server.tenant_id, 'mcp_servers');
          return saved;
        }),
      );
    } catch (e) {
      if (isUniqueViolation(e)) return null;
      throw e;
    }
  }

  async remove(id: string): Promise<void> {
    await this.repo.delete({ id });
  }
}
