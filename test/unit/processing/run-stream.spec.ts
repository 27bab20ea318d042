import { Subject } from 'rxjs';
import type { Response } from 'express';
import type { RunEvent, RunEventsBus } from '../../../src/common/run-events';
import { DEFAULT_VIEW } from '../../../src/processing/message.mapper';
import { RunStream } from '../../../src/processing/run-stream';

/** A Response that keeps what was written, as the frames' payloads. */
function fakeResponse() {
  const written: string[] = [];
  const res = {
    status: () => res,
    setHeader: () => undefined,
    flushHeaders: () => undefined,
    on: () => res,
    write: (chunk: string) => written.push(chunk),
    end: () => undefined,
  };
  const frames = () =>
    written
      .map((w) => w.replace(/^data: /, '').trim())
      .filter((w) => w.startsWith('{'))
      .map((w) => JSON.parse(w) as Record<string, unknown>);
  return { res: res as unknown as Response, frames };
}

describe('RunStream', () => {
  beforeEach(() => jest.useFakeTimers({ now: Date.parse('2025-01-02T03:04:05Z') }));
  afterEach(() => jest.useRealTimers());

  it("pings are Letta's LettaPing: id, date, run_id and the last seq_id sent", () => {
    const events = new Subject<RunEvent>();
    const { res, frames } = fakeResponse();
    const stream = new RunStream(res, { events$: events } as unknown as RunEventsBus, 'agent-1', {
      includePings: true,
      includeProgress: false,
      view: DEFAULT_VIEW,
    });
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
});
