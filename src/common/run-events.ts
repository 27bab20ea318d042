import { Global, Inject, Injectable, Logger, Module } from '@nestjs/common';
import { config as rxjsConfig, Observable, Subject } from 'rxjs';
import { EVENT_BUS, type EventBus } from '../cluster/event-bus';

/** A progress or message event of a run, published by processing and forwarded by the WebSocket gateway. */
export interface RunEvent {
  tenantId: string;
  agentId: string;
  runId: string;
  /** e.g. run.started, step.started, step.completed, tools.executing, tools.completed, message, run.completed */
  type: string;
  data: Record<string, unknown>;
  /** For a `message` of a send_message call: which of Letta's two presentations it belongs to. */
  sendMessageForm?: 'assistant' | 'tool' | 'hidden' | null;
}

/** `tools.completed` carries one of these per call. */
export interface ToolOutcomeFacts {
  tool_call_id: string;
  tool: string;
  /** executed, cached, refused, timeout, consent_required */
  kind: string;
  status: 'success' | 'error';
  error_type: string | null;
  /** The rule type that refused the call, if a rule did. */
  rule: string | null;
  duration_ms: number | null;
}

const subscriberLogger = new Logger('RunEvents');

/**
 * An exception thrown by a subscriber of an observable (of the run events: metrics, traces, logs,
 * webhooks, streams) is caught by rxjs, which neither stops the other subscribers nor the publisher,
 * but rethrows it on a timer: an uncaught exception, which ends the process. Installed once per
 * process (by the bus, before anyone subscribes), this logs it instead: no observer of the run events
 * can take the server down, whatever it is handed. The subscriber stays subscribed.
 */
export function logSubscriberErrors(): void {
  if (rxjsConfig.onUnhandledError) return;
  rxjsConfig.onUnhandledError = (e: unknown) =>
    subscriberLogger.error(
      `an event subscriber failed (the event was still delivered to the others): ${
        e instanceof Error ? (e.stack ?? e.message) : String(e)
      }`,
    );
}

/**
 * Run events as an observable, from this instance and the others (through the event bus, so an SSE
 * stream or a waiting caller on one instance follows a run processed on another); publishing never
 * blocks the loop, and a subscriber that throws never reaches the publisher nor ends the process
 * (`logSubscriberErrors`).
 */
@Injectable()
export class RunEventsBus {
  private readonly subject = new Subject<RunEvent>();
  readonly events$: Observable<RunEvent> = this.subject.asObservable();
  private readonly localSubject = new Subject<RunEvent>();
  /** Only the events this instance published (metrics, traces and logs count each run once). */
  readonly local$: Observable<RunEvent> = this.localSubject.asObservable();

  constructor(@Inject(EVENT_BUS) private readonly bus: EventBus) {
    logSubscriberErrors();
    bus.subscribe('run.event', (e) => this.subject.next(e));
  }

  publish(event: RunEvent): void {
    this.localSubject.next(event);
    this.bus.publish('run.event', event);
  }
}

@Global()
@Module({ providers: [RunEventsBus], exports: [RunEventsBus] })
export class RunEventsModule {}
