/** Why a run stopped, named as Letta names them, plus ours where none fits. */
export type StopReason =
  | 'end_turn'
  | 'tool_rule'
  | 'max_steps'
  | 'requires_approval'
  | 'cancelled'
  | 'error'
  | 'llm_api_error'
  | 'invalid_llm_response'
  | 'invalid_tool_call'
  | 'no_tool_call'
  | 'max_tokens_exceeded'
  | 'tool_rule_violation'
  | 'max_wall_time';

export type RunStatus = 'created' | 'running' | 'completed' | 'failed' | 'cancelled';

/** As Letta: end_turn, max_steps, tool_rule and requires_approval complete a run; cancelled cancels it; the rest fail it. */
export function runStatusFor(reason: StopReason): RunStatus {
  switch (reason) {
    case 'end_turn':
    case 'tool_rule':
    case 'max_steps':
    case 'requires_approval':
      return 'completed';
    case 'cancelled':
      return 'cancelled';
    case 'error':
    case 'llm_api_error':
    case 'invalid_llm_response':
    case 'invalid_tool_call':
    case 'no_tool_call':
    case 'max_tokens_exceeded':
    case 'tool_rule_violation':
    case 'max_wall_time':
      return 'failed';
  }
}
