import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import type { McpServerConfig } from '../core/mcp/mcp-server-spec';
import type { ToolSafety } from '../core/tools/tool-definition';
import { EpochMsColumn, JsonColumn } from '../database/columns';

/**
 * A declared MCP server. Env and header values are stored as written (`${SECRET}` references for
 * tenants), never resolved. Servers from config/mcp/*.yaml belong to tenant `*` (every tenant).
 */
@Entity('mcp_servers')
@Index('idx_mcp_servers_tenant_name', ['tenant_id', 'server_name'], { unique: true })
export class McpServerEntity {
  @PrimaryColumn({ type: 'varchar', length: 64 })
  id!: string;

  @Column({ type: 'varchar', length: 200 })
  tenant_id!: string;

  @Column({ type: 'varchar', length: 64 })
  server_name!: string;

  @JsonColumn()
  config!: McpServerConfig;

  @JsonColumn()
  tool_safety!: Record<string, ToolSafety>;

  @Column({ type: 'varchar', length: 16 })
  source!: 'api' | 'file';

  @EpochMsColumn()
  created_at!: number;

  @EpochMsColumn()
  updated_at!: number;
}
