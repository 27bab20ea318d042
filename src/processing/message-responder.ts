import { Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { RunEventsBus } from '../common/run-events';
import type { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { LettaView, shownMessages, toLettaUsage } from './message.mapper';
import { BatchResult, MessagingService } from './messaging.service';
import type { RunEntity } from './entities/run.entity';
import { HistoryService } from './history.service';
import { RunChunks } from './run-chunks';
import { runFailure } from './run-error';
import { RunStream, RunStreamOptions } from './run-stream';
import { parseSendMessage, sendMessageLimits, SendMessageRequest } from './send-message.dto';

/**
 * Sends a message request and answers it the Letta way, for the agent and the conversation routes alike:
 * JSON once the batch ends, or an SSE stream of the run.
 */
@Injectable()
export class MessageResponder {
  constructor(
    private readonly messaging: MessagingService,
    private readonly history: HistoryService,
    private readonly bus: RunEventsBus,
    private readonly chunks: RunChunks,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  private get maxBuffered(): number {
    return this.config.streaming.max_buffered_bytes;
  }

  /**
   * `streaming` is what the route implies when the body does not say (`/stream`, conversations);
   * `strictStreamOptions`: streaming options without streaming are refused (see parseSendMessage).
   */
  parse(body: unknown, streaming: boolean, strictStreamOptions = false): SendMessageRequest {
    return parseSendMessage(body, {
      streamPath: streaming,
      limits: sendMessageLimits(this.config),
      strictStreamOptions,
    });
  }

  async respond(tenant: string, agentId: string, req: SendMessageRequest, res: Response) {
    if (req.streaming) return this.stream(tenant, agentId, req, res);
    const run = await this.messaging.submit(tenant, agentId, req, 'sync');
    const result = await this.messaging.waitFor(run.id);
    // a run that failed on an error answers the error's status, as Letta's; other stops are answers
    const failure = runFailure(result.run);
    if (failure) throw failure;
    sendJson(res, toBatchResponse(result, req.view));
  }

  /**
   * Resumes a run's stream (Letta's `POST /v1/runs/{id}/stream`, a conversation's `/stream`): its stored
   * messages after `starting_after`, then live frames until it ends.
   */
  async resume(
    tenant: string,
    known: RunEntity,
    opts: RunStreamOptions & { startingAfter: number | null },
    res: Response,
  ): Promise<void> {
    // subscribe first, then read: whatever lands in between is in both and sent once (by seq_id)
    const stream = new RunStream(res, this.bus, known.agent_id, opts, this.maxBuffered);
    const run = await this.history.getRun(tenant, known.id);
    await stream.resume(
      run,
      (afterSeq, limit) => this.history.runMessagesAfter(tenant, known.id, afterSeq, limit),
      opts.startingAfter,
      this.chunks.of(known.id),
    );
  }

  /** Errors before the run is stored answer as JSON; from then on the stream carries everything. */
  private async stream(tenant: string, agentId: string, req: SendMessageRequest, res: Response) {
    let followed = false;
    const run = await this.messaging.submit(tenant, agentId, req, 'stream', (stored) => {
      followed = true;
      new RunStream(res, this.bus, agentId, req, this.maxBuffered).follow(stored.id);
    });
    // the same request sent again (its otids): the stream of the run stored for it, from its start
    if (!followed) await this.resume(tenant, run, { ...req, startingAfter: null }, res);
  }
}

/**
 * `res.json` without Express's work per answer that a POST does not use: parsing and re-formatting the
 * content type, and a weak ETag (a sha1 of the body) that no cache validates for a POST. GET routes keep it.
 */
function sendJson(res: Response, body: unknown): void {
  const text = JSON.stringify(body);
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.end(text);
}

export function toBatchResponse({ run, messages }: BatchResult, view: LettaView) {
  return {
    messages: shownMessages(messages, view),
    stop_reason: { message_type: 'stop_reason', stop_reason: run.stop_reason },
    usage: toLettaUsage(run.usage),
    run_id: run.id,
  };
}
