import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import type { Response } from 'express';
import { filter, Subscription } from 'rxjs';
import type { RunEvent, RunEventsBus } from '../common/run-events';
import type { MessageEntity } from './entities/message.entity';
import type { RunEntity, RunUsage } from './entities/run.entity';
import {
  inRunResponse,
  LettaMessage,
  LettaView,
  sendMessageForm,
  shownIn,
  toLettaMessage,
  toLettaUsage,
} from './message.mapper';
import { lettaRunError, LettaRunError } from './run-error';

export interface RunStreamOptions {
  includePings: boolean;
  /** Our opt-in progress frames (`include_progress`); off, the stream holds only Letta's frame types. */
  includeProgress: boolean;
  view: LettaView;
}

/** Keep-alive interval for SSE streams (proxies drop idle connections). */
const PING_MS = 15000;
/** Stored messages read per page when a stream is resumed. */
export const REPLAY_PAGE = 100;

/** A page of a run's stored messages: the first `limit` after seq_id `afterSeq`, in seq_id order. */
export type RunMessagePages = (afterSeq: number, limit: number) => Promise<MessageEntity[]>;

const logger = new Logger('RunStream');

/**
 * Streams a run as Letta does: unnamed `data:` frames only (the SDK drops named events), one per
 * message as it is stored (with `stream_tokens`, the model's text as several chunks sharing the
 * message's id instead), then the stop reason, the usage and `[DONE]`. Progress frames only on request:
 * they are not in Letta's streaming union, which clients validate against.
 */
export class RunStream {
  /** How long a resumed stream's replay waits for a client that reads nothing before ending its stream. */
  static replayStallMs = 2 * PING_MS;
  private sub: Subscription | null = null;
  private ping: NodeJS.Timeout | null = null;
  private runId: string | null = null;
  private ended = false;
  private readonly early: RunEvent[] = [];
  /** About what the events held in `early` will take written: counted against the buffer cap. */
  private earlyBytes = 0;
  /** Messages already sent as token-streaming chunks: their stored copy is not sent again. */
  private readonly chunked = new Set<string>();
  /** Resuming: the last stored message already replayed from the database. */
  private replayedSeq = -1;
  /** The seq_id of the last message frame sent (pings carry it, as Letta's, so a client can resume). */
  private lastSeq: number | null = null;

  constructor(
    private readonly res: Response,
    bus: RunEventsBus,
    agentId: string,
    private readonly opts: RunStreamOptions,
    /** `streaming.max_buffered_bytes`: past it (written, not read by the client) the stream is ended. */
    private readonly maxBufferedBytes: number,
  ) {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // subscribe before the run is queued, so nothing it publishes is missed
    this.sub = bus.events$.pipe(filter((e) => e.agentId === agentId)).subscribe((e) => {
      if (this.runId === null) {
        this.early.push(e);
        this.earlyBytes += JSON.stringify(e.data).length;
        this.overflowed();
      } else if (e.runId === this.runId) this.onEvent(e);
    });
    if (opts.includePings) {
      this.ping = setInterval(() => this.frame(this.pingFrame()), PING_MS);
      this.ping.unref();
    }
    res.on('close', () => this.close());
  }

  /** Follows this run from now on (events published before the id was known are replayed). */
  follow(runId: string): void {
    this.runId = runId;
    const early = this.early.splice(0);
    this.earlyBytes = 0;
    for (const e of early) if (e.runId === runId) this.onEvent(e);
  }

  /**
   * Resumes a run's stream (`POST /v1/runs/{id}/stream`): its stored messages and token-streaming chunks
   * (kept by RunChunks) after `startingAfter` (a seq_id), in seq_id order, then, if it is still going,
   * what it produces from now on. A chunked message is resent as its chunks, never whole on top of the
   * chunks the client has (when they are no longer kept, the rest of its text is only in history).
   * The stored messages are read a page at a time, the next one once the client has read the last (a
   * 2,000-step run is never held whole); what the run publishes meanwhile waits, counted against the cap.
   */
  async resume(
    run: RunEntity,
    pages: RunMessagePages,
    startingAfter: number | null,
    chunks: LettaMessage[] = [],
  ): Promise<void> {
    const after = startingAfter ?? -1;
    const chunkedIds = new Set(chunks.map((c) => c.id));
    const pending: LettaMessage[] = [];
    for (const c of chunks) {
      const seq = Number(c.seq_id);
      this.replayedSeq = Math.max(this.replayedSeq, seq);
      this.chunked.add(c.id);
      if (seq > after && shownIn(this.opts.view, c.message_type, null)) pending.push(c);
    }
    pending.sort((a, b) => Number(a.seq_id) - Number(b.seq_id));
    let next = 0; // the first chunk not sent yet: sent before the first stored message after it
    let cursor = after;
    for (;;) {
      if (this.ended) return;
      const page = await pages(cursor, REPLAY_PAGE);
      for (const m of page) {
        cursor = m.seq_id;
        this.replayedSeq = Math.max(this.replayedSeq, m.seq_id);
        if (chunkedIds.has(m.id)) continue;
        const chunkedFrom = m.payload._chunked_from;
        if (typeof chunkedFrom === 'number' && chunkedFrom <= after) continue;
        if (m.payload._input || !inRunResponse(m.message_type)) continue;
        if (!shownIn(this.opts.view, m.message_type, sendMessageForm(m))) continue;
        while (next < pending.length && Number(pending[next].seq_id) < m.seq_id)
          await this.replayFrame(pending[next++]);
        await this.replayFrame(toLettaMessage(m));
      }
      if (page.length < REPLAY_PAGE) break;
    }
    while (next < pending.length) await this.replayFrame(pending[next++]);
    if (this.ended) return;
    if (run.status === 'completed' || run.status === 'failed' || run.status === 'cancelled') {
      this.endWith(run.stop_reason, run.usage, lettaRunError(run));
    } else this.follow(run.id);
  }

  /** Ends the stream with an error frame (the request failed before its run started). */
  fail(body: { code: string; message: string }): void {
    if (this.ended) return;
    this.write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
    this.end();
  }

  private onEvent(e: RunEvent): void {
    switch (e.type) {
      case 'message.delta':
        if (Number(e.data.seq_id) <= this.replayedSeq || !this.shown(e)) break;
        this.chunked.add(String(e.data.id));
        this.frame(e.data);
        break;
      case 'message':
        if (Number(e.data.seq_id) <= this.replayedSeq) break;
        if (!this.chunked.delete(String(e.data.id)) && this.shown(e)) this.frame(e.data);
        break;
      case 'input_message':
      case 'step.completed': // facts for observability (and the WebSocket), not stream frames
      case 'tools.completed':
        break;
      case 'run.deferred':
        this.fail({ code: 'SHUTTING_DOWN', message: String(e.data.reason) });
        break;
      case 'run.completed': {
        const d = e.data as Pick<RunEntity, 'stop_reason' | 'usage' | 'error' | 'error_type'>;
        this.endWith(d.stop_reason, d.usage ?? null, lettaRunError({ ...d, id: e.runId }));
        break;
      }
      default:
        if (this.opts.includeProgress) {
          this.frame({ message_type: 'progress', event: e.type, run_id: e.runId, ...e.data });
        }
    }
  }

  private shown(e: RunEvent): boolean {
    const type = String(e.data.message_type);
    return inRunResponse(type) && shownIn(this.opts.view, type, e.sendMessageForm ?? null);
  }

  /**
   * A run that failed on an error ends as Letta's does: an `event: error` frame (LettaErrorMessage) after
   * the stop reason, on which Letta's SDK throws. The usage goes before it: nothing after it is read.
   */
  private endWith(stopReason: unknown, usage: RunUsage | null, error: LettaRunError | null): void {
    this.frame({ message_type: 'stop_reason', stop_reason: stopReason });
    this.frame(toLettaUsage(usage));
    if (error && !this.ended) this.write(`event: error\ndata: ${JSON.stringify(error)}\n\n`);
    this.end();
  }

  /** Letta's LettaPing: a keep-alive with its own id, the run and the last seq_id sent. */
  private pingFrame() {
    return {
      id: `ping-${randomUUID()}`,
      date: new Date().toISOString(),
      message_type: 'ping',
      run_id: this.runId,
      seq_id: this.lastSeq,
      step_id: null,
      otid: null,
      sender_id: null,
      name: null,
    };
  }

  private frame(data: Record<string, unknown>): void {
    if (this.ended) return;
    if (typeof data.seq_id === 'number') this.lastSeq = data.seq_id;
    this.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  private write(text: string): void {
    if (this.ended) return;
    this.res.write(text);
    this.overflowed();
  }

  /**
   * A client that does not read what it is sent: past `streaming.max_buffered_bytes` the stream is ended
   * as a client disconnect ends it (the run goes on; a client may resume it) and its buffers are freed.
   */
  private overflowed(): boolean {
    if (this.ended) return true;
    if (this.res.writableLength + this.earlyBytes <= this.maxBufferedBytes) return false;
    this.abandon(`is over streaming.max_buffered_bytes (${this.maxBufferedBytes}) unread`);
    return true;
  }

  /** Ends a stream whose client does not read it, as a disconnect ends it: the run goes on. */
  private abandon(why: string): void {
    if (this.ended) return;
    logger.warn(`ending a stream whose client does not read it: it ${why}; the run goes on`);
    this.close();
    this.early.splice(0);
    this.earlyBytes = 0;
    this.res.destroy();
  }

  /** A replayed frame: the next one once the client has read this one (when it did not fit the buffer). */
  private async replayFrame(data: Record<string, unknown>): Promise<void> {
    this.frame(data);
    if (!this.ended && this.res.writableNeedDrain) await this.drained();
  }

  /**
   * Resolves once the client has read what is buffered, or the stream is gone. A client that reads
   * nothing for `RunStream.replayStallMs` is left as one past the buffer cap: the stream is ended.
   */
  private drained(): Promise<void> {
    if (this.ended || this.res.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      const timer = setTimeout(() => {
        this.abandon(`reads nothing for ${RunStream.replayStallMs} ms of a resumed stream`);
        done();
      }, RunStream.replayStallMs);
      timer.unref();
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  private end(): void {
    if (this.ended) return;
    this.write('data: [DONE]\n\n');
    if (this.ended) return; // the last frame overflowed: the stream is already ended
    this.ended = true;
    this.res.end();
    this.close();
  }

  private close(): void {
    this.ended = true;
    this.sub?.unsubscribe();
    this.sub = null;
    if (this.ping) clearInterval(this.ping);
    this.ping = null;
  }
}
