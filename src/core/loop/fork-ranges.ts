/** Messages of another conversation of the agent that a fork shares (seq_id from..to, inclusive). */
export interface SharedRange {
  /** null: the agent's default conversation. */
  conversation_id: string | null;
  from_seq: number;
  to_seq: number;
}

/**
 * What a fork of `source` shares: the source's in-context messages up to `cut` (from `start`, where its
 * window begins), including what the source itself shares, clipped the same way. Seq ids grow per agent,
 * so one window start bounds every range.
 */
export function forkRanges(
  source: string | null,
  inherited: readonly SharedRange[] | null,
  start: number,
  cut: number,
): SharedRange[] {
  const kept = (inherited ?? [])
    .map((r) => ({ ...r, from_seq: Math.max(r.from_seq, start), to_seq: Math.min(r.to_seq, cut) }))
    .filter((r) => r.from_seq <= r.to_seq);
  return [...kept, { conversation_id: source, from_seq: start, to_seq: cut }];
}

/** Whether a message is in a conversation's window (its own from `start`, or a shared range). */
export function inWindow(
  m: { conversation_id: string | null; seq_id: number },
  conversation: string | null,
  inherited: readonly SharedRange[] | null,
  start: number,
): boolean {
  if (m.seq_id < start) return false;
  if (m.conversation_id === conversation) return true;
  return (inherited ?? []).some(
    (r) =>
      r.conversation_id === m.conversation_id && m.seq_id >= r.from_seq && m.seq_id <= r.to_seq,
  );
}
