/**
 * A token bucket: `ratePerSecond` tokens a second, at most `burst` saved up. Pure: the caller keeps the
 * state and passes the time, so a fake clock drives it in tests. A rate of 0 means no limit.
 */
export interface Bucket {
  tokens: number;
  at: number;
}

export interface Take {
  allowed: boolean;
  bucket: Bucket;
  /** When refused: how long until one token is back, in ms (0 when allowed). */
  retryAfterMs: number;
}

export function takeToken(
  bucket: Bucket | undefined,
  ratePerSecond: number,
  burst: number,
  now: number,
): Take {
  if (ratePerSecond <= 0)
    return { allowed: true, bucket: { tokens: burst, at: now }, retryAfterMs: 0 };
  // a clock that steps back refills nothing (and later time counts from the latest instant seen)
  const at = bucket ? Math.max(bucket.at, now) : now;
  const elapsed = bucket ? at - bucket.at : 0;
  const tokens = bucket ? Math.min(burst, bucket.tokens + (elapsed * ratePerSecond) / 1000) : burst;
  if (tokens >= 1) return { allowed: true, bucket: { tokens: tokens - 1, at }, retryAfterMs: 0 };
  return {
    allowed: false,
    bucket: { tokens, at },
    retryAfterMs: Math.ceil(((1 - tokens) * 1000) / ratePerSecond),
  };
}
