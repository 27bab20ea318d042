import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { AGENT_LEASES, AgentLeases, LocalAgentLeases } from './agent-leases';
import { EVENT_BUS, EventBus, InProcessEventBus } from './event-bus';
import { PgAgentLeases } from './pg-agent-leases';
import { PgEventBus } from './pg-event-bus';

/** Who this process is among the instances: the configured id and this boot's owner string. */
export interface InstanceIdentity {
  instanceId: string;
  /** `<instance id>/<boot id>`: leases and events name their owner and origin with it. */
  owner: string;
}

export const INSTANCE = Symbol('INSTANCE');

/**
 * The seams for running several instances on one database: the event bus and agent leases, on
 * PostgreSQL (LISTEN/NOTIFY, lease rows) or in process (SQLite: one process owns the file).
 */
@Global()
@Module({
  providers: [
    {
      provide: INSTANCE,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): InstanceIdentity => ({
        instanceId: config.cluster.instance_id,
        owner: `${config.cluster.instance_id}/${randomUUID().slice(0, 8)}`,
      }),
    },
    {
      provide: EVENT_BUS,
      inject: [APP_CONFIG, INSTANCE],
      useFactory: async (config: AppConfig, me: InstanceIdentity): Promise<EventBus> => {
        if (!config.database.url) return new InProcessEventBus();
        const bus = new PgEventBus({
          url: config.database.url,
          schema: config.database.schema,
          origin: me.owner,
        });
        await bus.start();
        return bus;
      },
    },
    {
      provide: AGENT_LEASES,
      inject: [APP_CONFIG, INSTANCE, DataSource],
      useFactory: (config: AppConfig, me: InstanceIdentity, ds: DataSource): AgentLeases =>
        config.database.url
          ? new PgAgentLeases(ds, {
              schema: config.database.schema,
              owner: me.owner,
              instanceId: me.instanceId,
              durationMs: config.cluster.lease_duration_ms,
              renewIntervalMs: config.cluster.lease_renew_interval_ms,
            })
          : new LocalAgentLeases(ds),
    },
  ],
  exports: [INSTANCE, EVENT_BUS, AGENT_LEASES],
})
export class ClusterModule implements OnApplicationShutdown {
  constructor(@Inject(EVENT_BUS) private readonly bus: EventBus) {}

  async onApplicationShutdown(): Promise<void> {
    if (this.bus instanceof PgEventBus) await this.bus.stop();
  }
}
