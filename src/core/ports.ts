/** Ports the pure core depends on; Nest providers implement them. */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export interface IdGenerator {
  /** `<prefix>-<uuid>`, as Letta names ids (`agent-…`, `message-…`, `run-…`). */
  prefixed(prefix: string): string;
  /** A snowflake id as a decimal string (batch ids). */
  snowflake(): string;
}
