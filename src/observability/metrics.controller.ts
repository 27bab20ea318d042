import { Controller, Get, Header, Headers, Inject } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { Public } from '../auth/tenant.guard';
import { DomainError } from '../common/domain-error';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { MetricsService } from './metrics.service';

/**
 * Prometheus text at /metrics. Labels name tools and models of every tenant, so with API keys
 * configured it answers only the operator's `observability.metrics.token` (a tenant's key is not enough).
 */
@Controller('metrics')
export class MetricsController {
  constructor(
    private readonly metrics: MetricsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  @Public()
  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  async scrape(@Headers('authorization') authorization?: string): Promise<string> {
    const { enabled, token } = this.config.observability.metrics;
    if (!enabled) throw new DomainError('not_found', 'NOT_FOUND', 'metrics are disabled');
    const keyed = this.config.auth.api_keys.length > 0;
    if (token !== null || keyed) {
      const given = Buffer.from(authorization?.replace(/^Bearer\s+/i, '') ?? '');
      const wanted = Buffer.from(token ?? '');
      if (token === null || given.length !== wanted.length || !timingSafeEqual(given, wanted))
        throw new DomainError(
          'unauthorized',
          'UNAUTHORIZED',
          'metrics need the operator metrics token',
        );
    }
    return this.metrics.registry.metrics();
  }
}
