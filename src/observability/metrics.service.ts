import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Subscription } from 'rxjs';
import { RunEvent, RunEventsBus, ToolOutcomeFacts } from '../common/run-events';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { Transactor } from '../database/transactor';
import { ModelRateLimiter } from '../models/model-rate.limiter';
import { ConsentGateway } from '../permissions/consent.gateway';
import { PermissionBrokerService } from '../permissions/permission-broker.service';
import { BoundedLabel, toolLabel } from './labels';
import { ObservabilityRepository } from './observability.repository';

/** A count or duration a metric can take: finite and not negative (a counter throws on a negative one). */
const measurable = (n: unknown): n is number =>
  typeof n === 'number' && Number.isFinite(n) && n >= 0;

/**
 * Prometheus metrics, one registry per app (tests boot several in one process). Counters follow the
 * run events and the broker's consent events; gauges that must be exact across instances (pending
 * consent, mailbox depth) are read from the database when scraped.
 */
@Injectable()
export class MetricsService implements OnModuleInit, OnApplicationShutdown {
  readonly registry = new Registry();
  private readonly runs = new Counter({
    name: 'agent_runs_total',
    help: 'Runs ended, by status and stop reason',
    labelNames: ['status', 'stop_reason'],
    registers: [this.registry],
  });
  private readonly steps = new Counter({
    name: 'agent_steps_total',
    help: 'Steps (model calls) completed, by model',
    labelNames: ['model'],
    registers: [this.registry],
  });
  private readonly modelLatency = new Histogram({
    name: 'agent_model_call_seconds',
    help: 'Model call latency, by model',
    labelNames: ['model'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'agent_model_tokens_total',
    help: 'Tokens used, by model and kind (prompt, completion)',
    labelNames: ['model', 'kind'],
    registers: [this.registry],
  });
  private readonly tools = new Counter({
    name: 'agent_tool_calls_total',
    help: 'Tool calls by tool and outcome (executed, cached, refused, timeout, consent_required, client_required, deferred) and status',
    labelNames: ['tool', 'outcome', 'status'],
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'agent_tool_refusals_total',
    help: 'Tool calls refused, by tool and the rule (or error type) that refused them',
    labelNames: ['tool', 'rule'],
    registers: [this.registry],
  });
  private readonly consentRequests = new Counter({
    name: 'agent_consent_requests_total',
    help: 'Consent requests created',
    registers: [this.registry],
  });
  private readonly consentOutcomes = new Counter({
    name: 'agent_consent_resolutions_total',
    help: 'Consent requests resolved, by outcome (the decision, or timeout, cancelled)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  private readonly consentWait = new Histogram({
    name: 'agent_consent_decision_seconds',
    help: 'Time from a consent request to its resolution, by outcome',
    labelNames: ['outcome'],
    buckets: [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600],
    registers: [this.registry],
  });
  private readonly logger = new Logger('Metrics');
  /** Model handles (an agent picks its model's name) and tool names (a request declares client tools). */
  private readonly modelLabels: BoundedLabel;
  private readonly toolLabels: BoundedLabel;
  private subscription: Subscription | null = null;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly bus: RunEventsBus,
    private readonly repo: ObservabilityRepository,
    private readonly moduleRef: ModuleRef,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    const labels = config.observability.labels;
    this.modelLabels = new BoundedLabel(labels.max_models, labels.max_chars);
    this.toolLabels = new BoundedLabel(labels.max_tools, labels.max_chars);
    collectDefaultMetrics({ register: this.registry, prefix: 'agent_server_' });
    new Gauge({
      name: 'agent_consent_pending',
      help: 'Consent requests waiting for a person',
      registers: [this.registry],
      collect: async function (this: Gauge) {
        this.set(await repo.pendingConsentCount());
      },
    });
    new Gauge({
      name: 'agent_mailbox_depth',
      help: 'Runs stored and waiting for their agent',
      registers: [this.registry],
      collect: async function (this: Gauge) {
        this.set(await repo.queuedRunCount());
      },
    });
    const gateway = () => this.moduleRef.get(ConsentGateway, { strict: false });
    new Gauge({
      name: 'agent_websocket_connections',
      help: 'Open WebSocket connections on this instance',
      registers: [this.registry],
      collect(this: Gauge) {
        this.set(gateway().server?.clients.size ?? 0);
      },
    });
    const rates = () => this.moduleRef.get(ModelRateLimiter, { strict: false });
    new Gauge({
      name: 'agent_model_calls_waiting',
      help: "Model calls waiting on this instance for their provider's requests_per_minute, by provider",
      labelNames: ['provider'],
      registers: [this.registry],
      collect(this: Gauge) {
        for (const { provider, calls } of rates().waiting()) this.set({ provider }, calls);
      },
    });
  }

  /** Database transaction latency, fed by the Transactor. */
  readonly transactions = new Histogram({
    name: 'agent_db_transaction_seconds',
    help: 'Database transaction latency',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
    registers: [this.registry],
  });

  onModuleInit(): void {
    this.moduleRef.get(Transactor, { strict: false }).observe = (s) => this.transactions.observe(s);
    this.subscription = this.bus.local$.subscribe((e) => {
      // a metric is never worth a run: whatever an event carries, nothing thrown here leaves
      try {
        this.count(e);
      } catch (err) {
        this.logger.error(`metrics of a ${e.type} event: ${String(err)}`);
      }
    });
    const broker = this.moduleRef.get(PermissionBrokerService, { strict: false });
    this.unsubscribe.push(
      broker.onRequest(() => this.consentRequests.inc()),
      broker.onDecision((r) => {
        const outcome = r.cause === 'decision' ? r.decision : r.cause;
        this.consentOutcomes.inc({ outcome });
        this.consentWait.observe({ outcome }, Math.max(0, r.decidedAt - r.createdAt) / 1000);
      }),
    );
  }

  private count(e: RunEvent): void {
    switch (e.type) {
      case 'run.completed':
        this.runs.inc({ status: String(e.data.status), stop_reason: String(e.data.stop_reason) });
        break;
      case 'step.completed': {
        const model = this.modelLabels.of(String(e.data.model));
        const usage = e.data.usage as { prompt_tokens?: unknown; completion_tokens?: unknown };
        this.steps.inc({ model });
        const seconds = Number(e.data.model_call_ms) / 1000;
        if (measurable(seconds)) this.modelLatency.observe({ model }, seconds);
        // the provider makes the counts whole and non-negative; a negative one would throw here
        if (measurable(usage?.prompt_tokens))
          this.tokens.inc({ model, kind: 'prompt' }, usage.prompt_tokens);
        if (measurable(usage?.completion_tokens))
          this.tokens.inc({ model, kind: 'completion' }, usage.completion_tokens);
        break;
      }
      case 'tools.completed':
        for (const o of e.data.outcomes as ToolOutcomeFacts[]) {
          const tool = this.toolLabels.of(toolLabel(o, this.config.observability.labels.max_chars));
          this.tools.inc({ tool, outcome: o.kind, status: o.status });
          if (o.kind === 'refused')
            this.refusals.inc({ tool, rule: o.rule ?? o.error_type ?? 'unknown' });
        }
        break;
    }
  }

  onApplicationShutdown(): void {
    this.subscription?.unsubscribe();
    this.unsubscribe.forEach((u) => u());
  }
}
