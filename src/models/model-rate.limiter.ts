import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { CLOCK } from '../common/clock';
import { FairRate } from '../core/limits/fair-rate';
import type { Clock } from '../core/ports';
import type { AdmitFn } from './openai.provider';
import { ModelProvidersService } from './providers/model-providers.service';

interface Gate {
  rate: FairRate<() => void>;
  timer: NodeJS.Timeout | null;
}

/**
 * Each provider's `requests_per_minute` on this instance (docs/security.md, "Model calls"): before every
 * attempt, retries too, a call waits here until FairRate gives its tenant a token, so one tenant's backlog
 * never holds another tenant's call back by more than its turn. Kept in memory, per instance, as the run
 * slots are: behind N instances the provider sees up to N times the rate.
 */
@Injectable()
export class ModelRateLimiter implements OnApplicationShutdown {
  private readonly gates = new Map<string, Gate>();

  constructor(
    @Inject(CLOCK) private readonly clock: Clock,
    providers: ModelProvidersService,
  ) {
    for (const p of providers.list())
      if (p.requests_per_minute > 0)
        this.gates.set(p.name, { rate: new FairRate(p.requests_per_minute), timer: null });
  }

  /** How `tenantId`'s calls to `provider` wait for their turn; null when the provider has no bound. */
  admitterFor(provider: string, tenantId: string): AdmitFn | null {
    const gate = this.gates.get(provider);
    return gate ? (signal) => this.admit(gate, tenantId, signal) : null;
  }

  /** Calls waiting for their turn, per provider with a bound. */
  waiting(): { provider: string; calls: number }[] {
    return [...this.gates].map(([provider, g]) => ({
      provider,
      calls: [...g.rate.waiting().values()].reduce((a, n) => a + n, 0),
    }));
  }

  onApplicationShutdown(): void {
    for (const g of this.gates.values()) if (g.timer) clearTimeout(g.timer);
  }

  private admit(gate: Gate, tenantId: string, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(new Error('aborted'));
      const go = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = () => {
        if (gate.rate.remove(tenantId, go)) reject(new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      gate.rate.push(tenantId, go);
      this.release(gate);
    });
  }

  /** Lets go the calls whose turn has come, and wakes again when the next token is due. */
  private release(gate: Gate): void {
    const { go, retryAfterMs } = gate.rate.release(this.clock.now());
    for (const g of go) g();
    if (gate.timer) clearTimeout(gate.timer);
    gate.timer = null;
    if (retryAfterMs === null) return;
    gate.timer = setTimeout(() => this.release(gate), retryAfterMs);
    gate.timer.unref();
  }
}
