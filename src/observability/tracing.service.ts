import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { context, Span, SpanStatusCode, trace, Tracer } from '@opentelemetry/api';
import type {
  BasicTracerProvider,
  InMemorySpanExporter,
  SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import type { Subscription } from 'rxjs';
import { RunEvent, RunEventsBus, ToolOutcomeFacts } from '../common/run-events';
import { APP_VERSION } from '../common/version';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { cutLabel, toolLabel } from './labels';

interface OpenRun {
  span: Span;
  step: Span | null;
}

/**
 * OpenTelemetry spans run → step → model call → tool execution, built from the run events (rule
 * refusals and consent waits are events on the tool spans). With `observability.tracing.exporter: none`
 * nothing is subscribed and nothing is allocated; `otlp` exports over OTLP/HTTP; `memory` keeps the
 * spans in `exporter` (tests).
 */
@Injectable()
export class TracingService implements OnModuleInit, OnApplicationShutdown {
  private provider: BasicTracerProvider | null = null;
  private tracer: Tracer | null = null;
  /** Set with the `memory` exporter. */
  exporter: InMemorySpanExporter | null = null;
  private readonly runs = new Map<string, OpenRun>();
  private subscription: Subscription | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly bus: RunEventsBus,
  ) {}

  async onModuleInit(): Promise<void> {
    const { exporter, otlp_endpoint, service_name } = this.config.observability.tracing;
    if (exporter === 'none') return;
    // the SDK and the exporter (~2.5 MB of heap) are loaded only when traces are exported
    const sdk = await import('@opentelemetry/sdk-trace-base');
    const { resourceFromAttributes } = await import('@opentelemetry/resources');
    let processor: SpanProcessor;
    if (exporter === 'memory') {
      this.exporter = new sdk.InMemorySpanExporter();
      processor = new sdk.SimpleSpanProcessor(this.exporter);
    } else {
      const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
      processor = new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url: otlp_endpoint! }));
    }
    // A provider of our own, not the global one: several apps may share a process (tests).
    this.provider = new sdk.BasicTracerProvider({
      resource: resourceFromAttributes({
        'service.name': service_name,
        'service.version': APP_VERSION,
      }),
      spanProcessors: [processor],
    });
    this.tracer = this.provider.getTracer('agent-server');
    this.subscription = this.bus.local$.subscribe((e) => this.onEvent(e));
  }

  async onApplicationShutdown(): Promise<void> {
    this.subscription?.unsubscribe();
    for (const r of this.runs.values()) {
      r.step?.end();
      r.span.end();
    }
    this.runs.clear();
    await this.provider?.shutdown();
  }

  private onEvent(e: RunEvent): void {
    const tracer = this.tracer!;
    const now = Date.now();
    switch (e.type) {
      case 'run.started': {
        const span = tracer.startSpan('run', {
          attributes: {
            'agent.run_id': e.runId,
            'agent.agent_id': e.agentId,
            'agent.tenant_id': e.tenantId,
            'agent.batch_id': text(e.data.batch_id),
          },
        });
        this.runs.set(e.runId, { span, step: null });
        break;
      }
      case 'step.started': {
        const run = this.runs.get(e.runId);
        if (!run) break;
        run.step?.end();
        run.step = tracer.startSpan(
          'step',
          {
            attributes: {
              'agent.step': Number(e.data.step),
              'agent.step_id': String(e.data.step_id),
            },
          },
          trace.setSpan(context.active(), run.span),
        );
        break;
      }
      case 'step.completed': {
        const run = this.runs.get(e.runId);
        if (!run?.step) break;
        const usage = e.data.usage as { prompt_tokens?: number; completion_tokens?: number } | null;
        const model = tracer.startSpan(
          'model call',
          {
            startTime: now - Number(e.data.model_call_ms),
            attributes: {
              'gen_ai.request.model': String(e.data.model),
              'gen_ai.usage.input_tokens': usage?.prompt_tokens ?? 0,
              'gen_ai.usage.output_tokens': usage?.completion_tokens ?? 0,
              'gen_ai.response.finish_reason': text(e.data.finish_reason),
            },
          },
          trace.setSpan(context.active(), run.step),
        );
        model.end(now);
        break;
      }
      case 'tools.completed': {
        const run = this.runs.get(e.runId);
        if (!run) break;
        const parent = run.step ?? run.span;
        for (const o of e.data.outcomes as ToolOutcomeFacts[]) this.toolSpan(parent, o, now);
        break;
      }
      case 'run.completed': {
        const run = this.runs.get(e.runId);
        if (!run) break;
        this.runs.delete(e.runId);
        run.step?.end();
        const usage = e.data.usage as { total_tokens?: number; step_count?: number } | null;
        run.span.setAttributes({
          'agent.status': String(e.data.status),
          'agent.stop_reason': String(e.data.stop_reason),
          'agent.steps': usage?.step_count ?? 0,
          'agent.total_tokens': usage?.total_tokens ?? 0,
        });
        if (e.data.status === 'failed')
          run.span.setStatus({ code: SpanStatusCode.ERROR, message: text(e.data.error) });
        run.span.end();
        break;
      }
    }
  }

  private toolSpan(parent: Span, o: ToolOutcomeFacts, now: number): void {
    const span = this.tracer!.startSpan(
      `tool ${toolLabel(o, this.config.observability.labels.max_chars)}`,
      {
        startTime: now - (o.duration_ms ?? 0),
        attributes: {
          'agent.tool': cutLabel(o.tool, this.config.observability.labels.max_chars),
          'agent.tool_call_id': o.tool_call_id,
          'agent.tool.outcome': o.kind,
          'agent.tool.status': o.status,
        },
      },
      trace.setSpan(context.active(), parent),
    );
    if (o.kind === 'refused')
      span.addEvent('rule verdict', {
        refused: true,
        rule: o.rule ?? '',
        error_type: o.error_type ?? '',
      });
    if (o.kind === 'consent_required') span.addEvent('consent wait');
    if (o.status === 'error')
      span.setStatus({ code: SpanStatusCode.ERROR, message: o.error_type ?? '' });
    span.end(now);
  }
}

const text = (v: unknown): string =>
  typeof v === 'string' ? v : v == null ? '' : JSON.stringify(v);
