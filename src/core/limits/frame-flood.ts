/**
 * What to do with a frame the rate bound refused. A flood is the run of refusals with no whole quiet
 * second between two of them; accepted frames in between do not end it (they did: a client sending a
 * little faster than the rate got an error frame at every gap and was never closed). The client is told
 * once a second at most, and closed once the flood's refusals pass `rate` (another second's worth).
 * Pure: the caller keeps the state and passes the time.
 */
export interface Flood {
  /** Refusals in this flood. */
  refused: number;
  lastRefusedAt: number;
  /** When the client was last sent an error frame for it. */
  warnedAt: number;
}

const SECOND_MS = 1000;

export function refuseFrame(
  flood: Flood | undefined,
  rate: number,
  now: number,
): { flood: Flood; warn: boolean; close: boolean } {
  if (flood === undefined || now - flood.lastRefusedAt > SECOND_MS)
    return {
      flood: { refused: 1, lastRefusedAt: now, warnedAt: now },
      warn: true,
      close: 1 > rate,
    };
  const warn = now - flood.warnedAt >= SECOND_MS;
  const next: Flood = {
    refused: flood.refused + 1,
    lastRefusedAt: now,
    warnedAt: warn ? now : flood.warnedAt,
  };
  return { flood: next, warn, close: next.refused > rate };
}
