import { Subject } from 'rxjs';
import type { Response } from 'express';
import type { RunEvent, RunEventsBus } from '../../../src/common/run-events';
import { DEFAULT_VIEW } from '../../../src/processing/message.mapper';
import type { MessageEntity } from '../../../src/processing/entities/message.entity';
import type { RunEntity } from '../../../src/processing/entities/run.entity';
import { REPLAY_PAGE, RunStream } from '../../../src/processing/run-stream';

/** A Response that keeps what was written, as the frames' payloads. */
function fakeResponse() {
  const written: string[] = [];
  const res = {
    status: () => res,
    setHeader: () => undefined,
    flushHeaders: () => undefined,
    on: () => res,
    off: () => res,
    write: (chunk: string) => written.push(chunk),
    end: () => undefined,
    destroy: jest.fn(),
    destroyed: false,
    writableLength: 0,
    writableNeedDrain: false,
  };
  const frames = () =>
    written
      .map((w) => w.replace(/^data: /, '').trim())
      .filter((w) => w.startsWith('{'))
      .map((w) => JSON.parse(w) as Record<string, unknown>);
  return { res: res as unknown as Response, raw: res, frames, written };
}

const MiB = 1024 * 1024;

describe('RunStream', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.parse('2025-01-02T03:04:05Z') }));
  afterEach(() => jest.useRealTimers());

  it("pings are Letta's LettaPing: id, date, run_id and the last seq_id sent", () => {
    const events = new Subject<RunEvent>();
    const { res, frames } = fakeResponse();
    const stream = new RunStream(
      res,
      { events$: events } as unknown as RunEventsBus,
      'agent-1',
      {
        includePings: true,
        includeProgress: false,
        view: DEFAULT_VIEW,
      },
      MiB,
    );
    stream.follow('run-1');
    events.next({
      tenantId: 't',
      agentId: 'agent-1',
      runId: 'run-1',
      type: 'message',
      data: { id: 'message-1', message_type: 'assistant_message', seq_id: 7, content: 'hi' },
    });
    jest.advanceTimersByTime(15_000);
    const ping = frames().at(-1)!;
    expect(ping).toMatchObject({
      message_type: 'ping',
      date: '2025-01-02T03:04:20.000Z',
      run_id: 'run-1',
      seq_id: 7,
    });
    expect(ping.id).toMatch(/^ping-[0-9a-f-]{36}$/);
    events.complete();
  });

  const opts = { includePings: false, includeProgress: false, view: DEFAULT_VIEW };
  const msg = (seq: number): MessageEntity =>
    ({
      id: `message-${seq}`,
      seq_id: seq,
      message_type: 'assistant_message',
      payload: { content: `m${seq}` },
      created_at: 0,
    }) as unknown as MessageEntity;

  it('resume reads the stored messages page by page, after starting_after, chunks in seq_id order', async () => {
    const events = new Subject<RunEvent>();
    const { res, frames } = fakeResponse();
    const stream = new RunStream(
      res,
      { events$: events } as unknown as RunEventsBus,
      'agent-1',
      opts,
      MiB,
    );
    const all = Array.from({ length: REPLAY_PAGE * 2 + 5 }, (_, i) => msg(i + 1));
    const reads: number[] = [];
    const pages = (after: number, limit: number) => {
      reads.push(after);
      return Promise.resolve(all.filter((m) => m.seq_id > after).slice(0, limit));
    };
    const chunk = { id: 'message-chunked', message_type: 'assistant_message', seq_id: 150.5 };
    const run = { id: 'run-1', status: 'completed', stop_reason: 'end_turn', usage: null };
    await stream.resume(run as unknown as RunEntity, pages, 3, [chunk]);
    const seqs = frames()
      .filter((f) => f.message_type === 'assistant_message')
      .map((f) => Number(f.seq_id));
    expect(seqs).toEqual(
      [...all.map((m) => m.seq_id).filter((s) => s > 3), 150.5].sort((a, b) => a - b),
    );
    expect(reads).toEqual([3, 3 + REPLAY_PAGE, 3 + REPLAY_PAGE * 2]);
    expect(frames().at(-2)).toMatchObject({ message_type: 'stop_reason', stop_reason: 'end_turn' });
    events.complete();
  });

  it('a client that does not read: past max_buffered_bytes the stream is ended (destroyed), nothing more written', () => {
    const events = new Subject<RunEvent>();
    const { res, raw, written } = fakeResponse();
    const stream = new RunStream(
      res,
      { events$: events } as unknown as RunEventsBus,
      'agent-1',
      opts,
      1024,
    );
    stream.follow('run-1');
    const send = (seq: number) =>
      events.next({
        tenantId: 't',
        agentId: 'agent-1',
        runId: 'run-1',
        type: 'message',
        data: {
          id: `message-${seq}`,
          message_type: 'assistant_message',
          seq_id: seq,
          content: 'x',
        },
      });
    send(1);
    expect(raw.destroy).not.toHaveBeenCalled();
    raw.writableLength = 2048;
    send(2);
    expect(raw.destroy).toHaveBeenCalledTimes(1);
    const count = written.length;
    send(3);
    expect(written).toHaveLength(count);
    events.complete();
  });
});
