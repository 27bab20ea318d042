/**
 * Whether a call's `request_heartbeat` value asks for a heartbeat: `true`, or the text "true" in any case,
 * which models without strict schemas send (Letta reads it so too).
 */
export function requestsHeartbeat(flag: unknown): boolean {
  return flag === true || (typeof flag === 'string' && flag.trim().toLowerCase() === 'true');
}
