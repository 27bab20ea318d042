import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { GroupCommit } from '../database/group-commit';
import { insertRows, updateWhere } from '../database/raw-writes';
import { Transactor } from '../database/transactor';
import { type Attempt, DeliveryQueue } from '../deliveries/delivery-queue';
import { RunCallbackEntity } from './entities/run-callback.entity';
import { type RunCallback, RunEntity } from './entities/run.entity';
import { toCallbackBody } from './message.mapper';

/** A run as it ended, with what its callback needs. */
export type EndedRun = Pick<
  RunEntity,
  'id' | 'tenant_id' | 'agent_id' | 'input' | 'status' | 'stop_reason' | 'completed_at' | 'error'
> & { error_type?: string | null };

/** The `run_callbacks` table: a run's callback stored with its end, then claimed and attempted. */
@Injectable()
export class RunCallbacksRepository {
  readonly queue: DeliveryQueue<RunCallbackEntity>;

  constructor(
    @InjectDataSource() private readonly ds: DataSource,
    tx: Transactor,
    private readonly writes: GroupCommit,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    this.queue = new DeliveryQueue(ds, tx, RunCallbackEntity);
  }

  /**
   * In the transaction that stores the run's end (`em`): its callback, due now. A tenant has at most its
   * share of posts open (`callback_max_in_flight_per_tenant`) and `callback_max_waiting_per_tenant` more
   * stored and not yet sent; past that the callback is not stored, and the run says why.
   */
  async storeWithEnd(em: EntityManager, run: EndedRun): Promise<void> {
    const url = run.input.callback_url;
    if (!url || run.completed_at === null) return;
    const w = this.config.webhooks;
    const cap = w.callback_max_in_flight_per_tenant + w.callback_max_waiting_per_tenant;
    if ((await this.pendingOf(em, run.tenant_id, cap)) >= cap) {
      const refused: RunCallback = {
        sent_at: null,
        status_code: null,
        error: `not sent: ${w.callback_max_waiting_per_tenant} callbacks of this tenant were already waiting (webhooks.callback_max_waiting_per_tenant)`,
      };
      await updateWhere(em, RunEntity, { id: run.id }, { callback: refused });
      return;
    }
    const row: RunCallbackEntity = {
      id: run.id,
      tenantId: run.tenant_id,
      url,
      body: toCallbackBody(run),
      status: 'pending',
      attempts: 0,
      lastStatusCode: null,
      lastError: null,
      nextAttemptAt: run.completed_at,
      claimedUntil: null,
      createdAt: run.completed_at,
      lastAttemptAt: null,
    };
    await insertRows(em, RunCallbackEntity, [row]);
  }

  /** An attempt's outcome, and the run's view of it (`callback_sent_at`, `_status_code`, `_error`). */
  async recordAttempt(row: RunCallbackEntity, a: Attempt, sentAt: number): Promise<void> {
    const callback: RunCallback = {
      sent_at: sentAt,
      status_code: a.lastStatusCode,
      error: a.lastError,
    };
    await this.writes.run(async (em) => {
      await this.queue.recordAttempt(row.id, a, em);
      await updateWhere(em, RunEntity, { id: row.id }, { callback });
    });
  }

  /** The tenant's callbacks not yet sent (open or waiting), counted up to `cap`. */
  private async pendingOf(em: EntityManager, tenantId: string, cap: number): Promise<number> {
    const pending = em
      .createQueryBuilder(RunCallbackEntity, 'c')
      .select('1')
      .where('c.tenant_id = :tenantId AND c.status = :pending', { tenantId, pending: 'pending' })
      .limit(cap);
    const got = await em
      .createQueryBuilder()
      .select('COUNT(*)', 'n')
      .from(`(${pending.getQuery()})`, 'p')
      .setParameters(pending.getParameters())
      .getRawOne<{ n: string | number }>();
    return Number(got?.n ?? 0);
  }

  prune(before: number): Promise<void> {
    return this.queue.prune(before, this.ds.manager);
  }
}
