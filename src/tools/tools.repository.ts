import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { GLOBAL_TOOL_TENANT, ToolEntity } from './tool.entity';

/** Declared tools: a tenant sees its own (API) tools and the global (file) ones. */
@Injectable()
export class ToolsRepository {
  constructor(@InjectRepository(ToolEntity) private readonly repo: Repository<ToolEntity>) {}

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

  save(tool: ToolEntity): Promise<ToolEntity> {
    return this.repo.save(tool);
  }

  async remove(id: string): Promise<void> {
    await this.repo.delete({ id });
  }
}
