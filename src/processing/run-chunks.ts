import { Injectable } from '@nestjs/common';
import type { LettaMessage } from './message.mapper';

/** One message's token-streaming chunks: the first chunk's frame, each chunk's seq_id and end offset. */
interface ChunkedMessage {
  first: LettaMessage;
  seqs: number[];
  ends: number[];
  text: string;
}

/** Finished runs whose chunks are kept for a late resume (the newest ones). */
const KEPT_FINISHED_RUNS = 16;

/**
 * The token-streaming chunks a run sent, by seq_id, so that a resumed stream (`starting_after` = a
 * chunk's seq_id) continues after that chunk instead of replaying the stored message whole: kept while
 * the run is live and for the last few finished runs, in this process.
 */
@Injectable()
export class RunChunks {
  private readonly runs = new Map<string, Map<string, ChunkedMessage>>();
  private readonly finished: string[] = [];

  add(runId: string, chunk: LettaMessage & { seq_id: number; content: string }): void {
    let messages = this.runs.get(runId);
    if (!messages) this.runs.set(runId, (messages = new Map<string, ChunkedMessage>()));
    const m = messages.get(chunk.id);
    if (!m) {
      messages.set(chunk.id, {
        first: chunk,
        seqs: [chunk.seq_id],
        ends: [chunk.content.length],
        text: chunk.content,
      });
      return;
    }
    m.text += chunk.content;
    m.seqs.push(chunk.seq_id);
    m.ends.push(m.text.length);
  }

  /** The seq_id of the first chunk of a message, if it was streamed in chunks. */
  firstSeq(runId: string, messageId: string): number | undefined {
    return this.runs.get(runId)?.get(messageId)?.seqs[0];
  }

  /** The run's chunks as they were sent, oldest first. */
  of(runId: string): LettaMessage[] {
    const out: LettaMessage[] = [];
    for (const m of this.runs.get(runId)?.values() ?? [])
      m.seqs.forEach((seq, i) =>
        out.push({ ...m.first, seq_id: seq, content: m.text.slice(m.ends[i - 1] ?? 0, m.ends[i]) }),
      );
    return out;
  }

  /** The run ended: its chunks are kept a little longer, for a client resuming just after. */
  end(runId: string): void {
    if (!this.runs.has(runId)) return;
    this.finished.push(runId);
    while (this.finished.length > KEPT_FINISHED_RUNS) this.runs.delete(this.finished.shift()!);
  }
}
