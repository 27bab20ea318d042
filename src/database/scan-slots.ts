import { Inject, Injectable } from '@nestjs/common';
import { DomainError } from '../common/domain-error';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { FairSlots } from '../core/limits/fair-slots';

/**
 * Fair slots for the bounded scans (`limits.search_scan_*`: message search, conversation_search, the
 * blocks list's text and tag filters; archival vector search, up to `max_scan_passages`). One scan may read ~20 MB (0.2 s on SQLite), and the database
 * takes statements in the order they come (SQLite one at a time, PostgreSQL's pool by connection), so a
 * tenant's forty searches at once had every other tenant's requests wait 7 s behind them, and a model
 * step of 128 conversation_search calls 30 s. Now at most `limits.search_scans_in_flight` scans run at
 * once, `_per_tenant` of one tenant's; a tenant's further scans wait their turn (a freed slot goes to the
 * tenant with the fewest running), and past `search_scans_waiting_per_tenant` waiting one is refused:
 * 429 SEARCH_BUSY. Per instance, as the other fair shares.
 */
@Injectable()
export class ScanSlots {
  private readonly slots: FairSlots<() => void>;

  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {
    const l = config.limits;
    this.slots = new FairSlots({
      total: l.search_scans_in_flight,
      perTenant: l.search_scans_in_flight_per_tenant,
      maxWaiting: l.search_scans_waiting_per_tenant,
    });
  }

  /** Runs `scan` in one of the tenant's slots, once it has one. */
  async run<T>(tenantId: string, scan: () => Promise<T>): Promise<T> {
    await this.turn(tenantId);
    try {
      return await scan();
    } finally {
      for (const next of this.slots.done(tenantId)) next.item();
    }
  }

  private turn(tenantId: string): Promise<void> {
    let start!: () => void;
    const started = new Promise<void>((resolve) => (start = resolve));
    const got = this.slots.push(tenantId, start);
    if (got === 'start') return Promise.resolve();
    if (got === 'wait') return started;
    const max = this.config.limits.search_scans_waiting_per_tenant;
    return Promise.reject(
      new DomainError(
        'too_many_requests',
        'SEARCH_BUSY',
        `${max} searches of this tenant are already waiting for their turn (limits.search_scans_waiting_per_tenant); search again when they have been answered`,
        { limit: 'limits.search_scans_waiting_per_tenant', max },
      ),
    );
  }
}
