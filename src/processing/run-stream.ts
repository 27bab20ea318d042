import type { Response } from 'express';
import { filter, Subscription } from 'rxjs';
import type { RunEvent, RunEventsBus } from '../common/run-events';
import type { RunUsage } from './entities/run.entity';
import { toLettaUsage } from './message.mapper';

/** Keep-alive interval for SSE streams (proxies drop idle connections). */
const PING_MS = 15000;

/**
 * Streams a run as Letta does: unnamed `data:` frames only (the SDK drops named events), one per
 * message as it is stored (with `stream_tokens`, the model's text as several chunks sharing the
 * message's id instead), progress frames, then the stop reason, the usage and `[DONE]`.
 */
export class RunStream {
  private sub: Subscription | null = null;
  private ping: NodeJS.Timeout | null = null;
  private runId: string | null = null;
  private ended = false;
  private readonly early: RunEvent[] = [];
  /** Messages already sent as token-streaming chunks: their stored copy is not sent again. */
  private readonly chunked = new Set<string>();

  constructor(
    private readonly res: Response,
    private readonly bus: RunEventsBus,
    private readonly agentId: string,
    includePings: boolean,
  ) {
    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream');
    res.setHeader('Cache-Control', 'no-cache');
    res.setHeader('Connection', 'keep-alive');
    res.setHeader('X-Accel-Buffering', 'no');
    res.flushHeaders();
    // subscribe before the run is queued, so nothing it publishes is missed
    this.sub = bus.events$.pipe(filter((e) => e.agentId === agentId)).subscribe((e) => {
      if (this.runId === null) this.early.push(e);
      else if (e.runId === this.runId) this.onEvent(e);
    });
    if (includePings) {
      this.ping = setInterval(() => this.frame({ message_type: 'ping' }), PING_MS);
      this.ping.unref();
    }
    res.on('close', () => this.close());
  }

  /** Follows this run from now on (events published before the id was known are replayed). */
  follow(runId: string): void {
    this.runId = runId;
    const early = this.early.splice(0);
    for (const e of early) if (e.runId === runId) this.onEvent(e);
  }

  /** Ends the stream with an error frame (the request failed before its run started). */
  fail(body: { code: string; message: string }): void {
    if (this.ended) return;
    this.res.write(`event: error\ndata: ${JSON.stringify(body)}\n\n`);
    this.end();
  }

  private onEvent(e: RunEvent): void {
    switch (e.type) {
      case 'message.delta':
        this.chunked.add(String(e.data.id));
        this.frame(e.data);
        break;
      case 'message':
        if (!this.chunked.delete(String(e.data.id))) this.frame(e.data);
        break;
      case 'input_message':
        break;
      case 'run.deferred':
        this.fail({ code: 'SHUTTING_DOWN', message: String(e.data.reason) });
        break;
      case 'run.completed':
        this.frame({ message_type: 'stop_reason', stop_reason: e.data.stop_reason });
        this.frame(toLettaUsage((e.data.usage as RunUsage | null) ?? null));
        this.end();
        break;
      default:
        this.frame({ message_type: 'progress', event: e.type, run_id: e.runId, ...e.data });
    }
  }

  private frame(data: unknown): void {
    if (this.ended) return;
    this.res.write(`data: ${JSON.stringify(data)}\n\n`);
  }

  private end(): void {
    if (this.ended) return;
    this.res.write('data: [DONE]\n\n');
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
