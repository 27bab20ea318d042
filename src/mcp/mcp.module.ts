import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ToolsModule } from '../tools/tools.module';
import { McpConnections } from './mcp-connections';
import { McpServerEntity } from './mcp-server.entity';
import { McpServersController } from './mcp-servers.controller';
import { McpServersRepository } from './mcp-servers.repository';
import { McpServersService } from './mcp-servers.service';
import { SecretsService } from '../secrets/secrets.service';
import { TENANT_SECRETS } from './tenant-secrets.port';

/**
 * MCP servers as tool sources. Imports ToolsModule so the tool files are loaded before MCP tools are
 * listed (module init order follows imports).
 */
@Module({
  imports: [ToolsModule, TypeOrmModule.forFeature([McpServerEntity])],
  controllers: [McpServersController],
  providers: [
    McpServersRepository,
    McpServersService,
    McpConnections,
    // the tenant secret store (SecretsModule, global)
    { provide: TENANT_SECRETS, useExisting: SecretsService },
  ],
})
export class McpModule {}
