import { Logger } from '@nestjs/common';
import type { RunEvent } from '../common/run-events';
import type { ConsentRequestEntity } from '../permissions/consent.entities';
import type { ConsentResolved } from '../permissions/permission-broker.service';

/** What instances tell each other (and themselves): one topic per concern. */
export interface BusEvents {
  /** Progress and messages of a run, for SSE streams, waiting callers and WebSocket clients. */
  'run.event': RunEvent;
  /** A new pending consent request, for the WebSocket clients of every instance. */
  'consent.request': ConsentRequestEntity;
  /** A request was decided, expired or cancelled: dialogs close everywhere. */
  'consent.resolved': ConsentResolved;
  /** A run of this agent was stored: its lease holder takes it. */
  'agent.wake': { tenantId: string; agentId: string };
  /** Cancel these running runs (the instance running them aborts them). */
  'run.cancel': { agentId: string; runIds: string[] };
}
export type BusTopic = keyof BusEvents;
export type BusHandler<T extends BusTopic> = (data: BusEvents[T]) => void;

/**
 * Events between the instances sharing a database, and within one. Local subscribers get an event at
 * once, in publishing order; the other instances get it soon after, in the same order. Delivery to other
 * instances is best effort (a dropped connection loses events): whatever must not be lost is in the
 * database, and the events only make others look sooner.
 */
export interface EventBus {
  publish<T extends BusTopic>(topic: T, data: BusEvents[T]): void;
  /** Returns the unsubscribe function. */
  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void;
  /** Whether events reach the other instances (the in-process bus: always). */
  isUp(): boolean;
}

export const EVENT_BUS = Symbol('EVENT_BUS');

/** The subscribers of one process, by topic: both adapters deliver through it. */
export class LocalFanout {
  private readonly handlers = new Map<BusTopic, Set<(data: unknown) => void>>();
  private readonly logger = new Logger('EventBus');

  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void {
    let set = this.handlers.get(topic);
    if (!set) this.handlers.set(topic, (set = new Set()));
    const h = handler as (data: unknown) => void;
    set.add(h);
    return () => set.delete(h);
  }

  deliver(topic: BusTopic, data: unknown): void {
    for (const h of this.handlers.get(topic) ?? []) {
      try {
        h(data);
      } catch (e) {
        this.logger.error(`${topic} subscriber: ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
}

/** One process (SQLite): events go to this process's subscribers only. */
export class InProcessEventBus implements EventBus {
  private readonly fanout = new LocalFanout();

  publish<T extends BusTopic>(topic: T, data: BusEvents[T]): void {
    this.fanout.deliver(topic, data);
  }

  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void {
    return this.fanout.subscribe(topic, handler);
  }

  isUp(): boolean {
    return true;
  }
}
