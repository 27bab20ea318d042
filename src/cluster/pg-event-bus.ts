import { Logger } from '@nestjs/common';
import type { Client } from 'pg';
import { BusEvents, BusHandler, BusTopic, EventBus, LocalFanout } from './event-bus';
import { sqlTable } from '../database/sql-names';

/** NOTIFY refuses payloads of 8000 bytes or more; a bigger event goes through a table row. */
const MAX_PAYLOAD_BYTES = 7500;
/** How long an oversized event's row is kept for the listeners to read it. */
const OVERFLOW_TTL_MS = 60_000;
const RECONNECT_MS = 1000;

/** One event on the wire: its origin, topic and either the data or the id of its overflow row. */
interface Envelope {
  o: string;
  t: BusTopic;
  d?: unknown;
  r?: string;
}

export interface PgEventBusOptions {
  url: string;
  schema: string | null;
  /** This process (instance id and boot), so that it skips its own events when they come back. */
  origin: string;
}

/**
 * The event bus over PostgreSQL LISTEN/NOTIFY, one channel per database schema. Events published in one
 * tick go out together, packed into as few NOTIFY payloads as fit; an event too big for a payload is
 * stored in `bus_payloads` and its id sent instead. A dedicated connection listens (and reconnects);
 * another publishes, so the order of one instance's events is kept.
 */
export class PgEventBus implements EventBus {
  private readonly logger = new Logger('EventBus');
  private readonly fanout = new LocalFanout();
  private readonly channel: string;
  private readonly overflowTable: string;
  private listener: Client | null = null;
  private publisher: Promise<Client> | null = null;
  private pending: Envelope[] = [];
  private flushing = false;
  private closed = false;
  private inbound: Promise<void> = Promise.resolve();
  private seq = 0;
  private lastPrune = 0;
  /** `pg` (~3 MB of heap) is loaded only where this bus is made: a server on SQLite never needs it. */
  private readonly pg = import('pg');

  constructor(private readonly opts: PgEventBusOptions) {
    this.channel = ('rulebound_events_' + (opts.schema ?? 'public')).slice(0, 63);
    this.overflowTable = sqlTable(opts.schema, 'bus_payloads');
  }

  async start(): Promise<void> {
    await this.listen();
  }

  async stop(): Promise<void> {
    this.closed = true;
    await this.drained();
    const clients = [this.listener, this.publisher ? await this.publisher.catch(() => null) : null];
    this.listener = null;
    this.publisher = null;
    for (const c of clients) await c?.end().catch(() => undefined);
  }

  isUp(): boolean {
    return this.listener !== null;
  }

  publish<T extends BusTopic>(topic: T, data: BusEvents[T]): void {
    this.fanout.deliver(topic, data);
    if (this.closed) return;
    this.pending.push({ o: this.opts.origin, t: topic, d: data });
    if (!this.flushing) {
      this.flushing = true;
      // everything published in this tick goes in one flush
      setImmediate(() => void this.flush());
    }
  }

  subscribe<T extends BusTopic>(topic: T, handler: BusHandler<T>): () => void {
    return this.fanout.subscribe(topic, handler);
  }

  // ------------------------------------------------------------ outbound

  private async flush(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0);
        try {
          const client = await this.publisherClient();
          for (const payload of await this.pack(client, batch)) {
            await client.query('SELECT pg_notify($1, $2)', [this.channel, payload]);
          }
        } catch (e) {
          // best effort: the database holds what must not be lost; the next publish reconnects
          this.logger.warn(`${batch.length} event(s) not sent to other instances: ${String(e)}`);
          this.publisher = null;
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /** The batch as NOTIFY payloads (JSON arrays of envelopes), each under the size limit. */
  private async pack(client: Client, batch: Envelope[]): Promise<string[]> {
    const out: string[] = [];
    let parts: string[] = [];
    let size = 2;
    for (const env of batch) {
      let text = JSON.stringify(env);
      if (Buffer.byteLength(text) > MAX_PAYLOAD_BYTES - 2) {
        const id = `${this.opts.origin}:${++this.seq}`;
        await client.query(
          `INSERT INTO ${this.overflowTable} (id, payload, created_at) VALUES ($1, $2, $3)`,
          [id, text, Date.now()],
        );
        text = JSON.stringify({ o: env.o, t: env.t, r: id });
      }
      const bytes = Buffer.byteLength(text) + 1;
      if (parts.length > 0 && size + bytes > MAX_PAYLOAD_BYTES) {
        out.push(`[${parts.join(',')}]`);
        parts = [];
        size = 2;
      }
      parts.push(text);
      size += bytes;
    }
    if (parts.length > 0) out.push(`[${parts.join(',')}]`);
    if (Date.now() - this.lastPrune > OVERFLOW_TTL_MS) {
      this.lastPrune = Date.now();
      await client.query(`DELETE FROM ${this.overflowTable} WHERE created_at < $1`, [
        Date.now() - OVERFLOW_TTL_MS,
      ]);
    }
    return out;
  }

  private publisherClient(): Promise<Client> {
    if (!this.publisher) {
      const p = this.pg.then(async ({ Client }) => {
        const c = new Client({ connectionString: this.opts.url });
        c.on('error', () => {
          if (this.publisher === p) this.publisher = null;
        });
        await c.connect();
        return c;
      });
      this.publisher = p;
      p.catch(() => {
        if (this.publisher === p) this.publisher = null;
      });
    }
    return this.publisher;
  }

  private async drained(): Promise<void> {
    while (this.flushing) await new Promise((r) => setTimeout(r, 5));
    await this.inbound;
  }

  // ------------------------------------------------------------ inbound

  private async listen(): Promise<void> {
    const { Client } = await this.pg;
    const c = new Client({ connectionString: this.opts.url });
    c.on('notification', (n) => {
      if (n.channel !== this.channel || !n.payload) return;
      const payload = n.payload;
      // one at a time, so that an overflow read does not reorder an instance's events
      this.inbound = this.inbound.then(() => this.receive(payload));
    });
    const lost = () => {
      if (this.listener !== c) return;
      this.listener = null;
      c.end().catch(() => undefined);
      this.logger.warn('event channel lost; reconnecting');
      this.reconnectSoon();
    };
    c.on('error', lost);
    c.on('end', lost);
    await c.connect();
    await c.query(`LISTEN "${this.channel}"`);
    this.listener = c;
  }

  private reconnectSoon(): void {
    if (this.closed) return;
    setTimeout(() => {
      if (this.closed || this.listener) return;
      this.listen().then(
        () => this.logger.log('event channel up again'),
        () => this.reconnectSoon(),
      );
    }, RECONNECT_MS).unref();
  }

  private async receive(payload: string): Promise<void> {
    let envelopes: Envelope[];
    try {
      envelopes = JSON.parse(payload) as Envelope[];
    } catch {
      return;
    }
    for (const env of envelopes) {
      if (env.o === this.opts.origin) continue;
      let data = env.d;
      if (env.r !== undefined) {
        try {
          const client = await this.publisherClient();
          const res = await client.query<{ payload: string }>(
            `SELECT payload FROM ${this.overflowTable} WHERE id = $1`,
            [env.r],
          );
          if (!res.rows[0]) continue;
          data = (JSON.parse(res.rows[0].payload) as Envelope).d;
        } catch (e) {
          this.logger.warn(`could not read event ${env.r}: ${String(e)}`);
          continue;
        }
      }
      this.fanout.deliver(env.t, data);
    }
  }
}
