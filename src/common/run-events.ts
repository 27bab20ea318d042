import { Global, Injectable, Module } from '@nestjs/common';
import { Observable, Subject } from 'rxjs';

/** A progress or message event of a run, published by processing and forwarded by the WebSocket gateway. */
export interface RunEvent {
  tenantId: string;
  agentId: string;
  runId: string;
  /** e.g. run.started, step.started, tools.executing, message, run.completed */
  type: string;
  data: Record<string, unknown>;
}

/** In-process publish/subscribe for run events; publishing never blocks the loop. */
@Injectable()
export class RunEventsBus {
  private readonly subject = new Subject<RunEvent>();
  readonly events$: Observable<RunEvent> = this.subject.asObservable();

  publish(event: RunEvent): void {
    this.subject.next(event);
  }
}

@Global()
@Module({ providers: [RunEventsBus], exports: [RunEventsBus] })
export class RunEventsModule {}
