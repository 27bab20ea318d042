import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { Response } from 'express';
import { DataSource } from 'typeorm';
import { Public } from '../auth/tenant.guard';
import { EVENT_BUS, type EventBus } from '../cluster/event-bus';
import { INSTANCE, type InstanceIdentity } from '../cluster/cluster.module';
import { APP_VERSION } from '../common/version';

/** A database that does not answer within this is reported down. */
const DB_CHECK_MS = 2000;

interface Health {
  status: 'ok' | 'degraded';
  version: string;
  instance_id: string;
  database: 'up' | 'down';
  events: 'up' | 'down';
}

interface Readiness {
  status: 'ready' | 'not_ready';
  instance_id: string;
  checks: {
    database: 'up' | 'down';
    events: 'up' | 'down';
    migrations: 'done' | 'pending';
    /** Boot recovery runs before the server listens: a request that gets here has it behind it. */
    recovery: 'done';
  };
}

/**
 * Liveness (`/v1/health/`: 200 while the process serves, with what it depends on) and readiness
 * (`/v1/health/ready`: 503 unless the database answers, the event channel is up and no migration is
 * pending), so a load balancer sends no traffic to an instance that cannot work and a supervisor does
 * not restart one whose database is away.
 */
@Controller('v1/health')
export class HealthController {
  private migrated = false;

  constructor(
    private readonly ds: DataSource,
    @Inject(EVENT_BUS) private readonly bus: EventBus,
    @Inject(INSTANCE) private readonly me: InstanceIdentity,
  ) {}

  @Public()
  @Get()
  async health(): Promise<Health> {
    const database = (await this.answers(this.ds.query('SELECT 1'))) ? 'up' : 'down';
    const events = this.bus.isUp() ? 'up' : 'down';
    return {
      status: database === 'up' && events === 'up' ? 'ok' : 'degraded',
      version: APP_VERSION,
      instance_id: this.me.instanceId,
      database,
      events,
    };
  }

  @Public()
  @Get('ready')
  async ready(@Res({ passthrough: true }) res: Response): Promise<Readiness> {
    const database = (await this.answers(this.ds.query('SELECT 1'))) ? 'up' : 'down';
    if (database === 'up' && !this.migrated)
      this.migrated = await this.answers(this.ds.showMigrations().then((pending) => !pending));
    const events = this.bus.isUp() ? 'up' : 'down';
    const ready = database === 'up' && events === 'up' && this.migrated;
    if (!ready) res.status(503);
    return {
      status: ready ? 'ready' : 'not_ready',
      instance_id: this.me.instanceId,
      checks: {
        database,
        events,
        migrations: this.migrated ? 'done' : 'pending',
        recovery: 'done',
      },
    };
  }

  /** Whether `check` resolves true within DB_CHECK_MS (a rejection or a hang is false). */
  private async answers(check: Promise<unknown>): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        check.then((v) => v !== false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(false), DB_CHECK_MS))),
      ]);
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
    }
  }
}
