import stableStringify from 'json-stable-stringify';
import type { ExecutorSettings } from '../executor/contracts';
import type { ToolDefinition } from '../tools/tool-definition';
import type { DedupeMode } from './tool-rule';
import { ALLOW, AwaitingCall, deny, RuleOf, Verdict, waitingFor } from './verdict';

export type DedupeRule = RuleOf<'dedupe'>;

export interface DedupePolicy {
  mode: Exclude<DedupeMode, 'off'>;
  windowMs: number;
  rule?: DedupeRule;
}

/**
 * The dedupe policy for a tool: its own dedupe rule, else a `"*"` rule, else the default
 * (reject within settings.dedupeWindowMs for side_effecting and privileged tools, off for read_only).
 * `null` means no dedupe.
 */
export function dedupePolicy(
  tool: ToolDefinition,
  own: DedupeRule | undefined,
  star: DedupeRule | undefined,
  settings: ExecutorSettings,
): DedupePolicy | null {
  const rule = own ?? star;
  if (rule) {
    if (rule.mode === 'off' || rule.window_seconds <= 0) return null;
    return { mode: rule.mode, windowMs: rule.window_seconds * 1000, rule };
  }
  // a client tool's effects are the client's (Letta Code reads the same file twice): explicit rules only
  if (tool.safety === 'read_only' || tool.kind === 'client' || settings.dedupeWindowMs <= 0)
    return null;
  return { mode: 'reject', windowMs: settings.dedupeWindowMs };
}

/** `tool_name|json-stable-stringify(arguments)`; the caller has already removed request_heartbeat. */
export function canonicalKey(toolName: string, args: Record<string, unknown>): string {
  return toolName + '|' + (stableStringify(args) ?? '{}');
}

/** dedupe (persistent): an identical call that succeeded, or did not finish, within the window is not executed again. */
export function checkDedupe(
  policy: DedupePolicy,
  tool: string,
  entry: { at: number; expiresAt: number; unknown?: true } | null,
  now: number,
): Verdict {
  if (!entry || !isLive(policy, entry, now)) return ALLOW;
  const ago = Math.max(0, Math.round((now - entry.at) / 1000));
  const window = `dedupe window ${policy.windowMs / 1000}s`;
  return deny(
    'Deduplicated',
    entry.unknown
      ? `${tool} was called with these arguments ${ago}s ago and did not finish: its outcome is unknown (it may have taken effect), so it is not run again (${window}); check before calling it again, or change the arguments`
      : `${tool} already ran with these arguments ${ago}s ago (${window}); use its earlier result or change the arguments`,
    policy.rule,
  );
}

/**
 * dedupe within one turn: an identical earlier call that waits (for consent or the client) makes this one a
 * duplicate once it runs (and there is no result yet to answer with), so this one is refused rather than asked about.
 */
export function checkDedupeInTurn(
  policy: DedupePolicy,
  tool: string,
  key: string,
  awaiting: readonly AwaitingCall[],
): Verdict {
  const twin = awaiting.find((w) => w.key === key);
  if (twin === undefined) return ALLOW;
  return deny(
    'Deduplicated',
    `${tool} was already called with these arguments in this turn (call ${twin.toolCallId}, waiting for ${waitingFor(twin)}; dedupe window ${policy.windowMs / 1000}s); use its result once it runs, or change the arguments`,
    policy.rule,
  );
}

export function isLive(
  policy: DedupePolicy,
  entry: { at: number; expiresAt: number },
  now: number,
) {
  return now < entry.expiresAt && now < entry.at + policy.windowMs;
}
