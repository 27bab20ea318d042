import { Global, Module } from '@nestjs/common';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';
import { ObservabilityRepository } from './observability.repository';
import { RunLogService } from './run-log.service';
import { TracingService } from './tracing.service';

/** Logs, metrics and traces: they watch the run events and the broker, and change nothing. */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [ObservabilityRepository, MetricsService, TracingService, RunLogService],
  exports: [MetricsService, TracingService],
})
export class ObservabilityModule {}
