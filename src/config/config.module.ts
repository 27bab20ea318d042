import { DynamicModule, Global, Module } from '@nestjs/common';
import { HostPolicy } from '../core/net/host-policy';
import { setMaxSchemaExpansion } from '../core/schemas/schema-compiler';
import { AppConfig } from './app-config';

export const APP_CONFIG = Symbol('APP_CONFIG');

/**
 * The one outbound host policy (`tools.http.allowed_hosts` / `denied_hosts`): http tools, MCP servers,
 * webhooks and run callbacks all reach tenant-chosen URLs, so all of them answer to it.
 */
export const OUTBOUND_HOST_POLICY = Symbol('OUTBOUND_HOST_POLICY');

@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: AppConfig): DynamicModule {
    setMaxSchemaExpansion(config.limits.max_schema_expansion);
    const policy = new HostPolicy(config.tools.http.allowed_hosts, config.tools.http.denied_hosts);
    return {
      module: ConfigModule,
      providers: [
        { provide: APP_CONFIG, useValue: config },
        { provide: OUTBOUND_HOST_POLICY, useValue: policy },
      ],
      exports: [APP_CONFIG, OUTBOUND_HOST_POLICY],
    };
  }
}
