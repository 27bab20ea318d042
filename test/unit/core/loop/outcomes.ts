import type { OutcomeView } from '../../../../src/core/loop/loop-decision';

/** A call's outcome as the loop sees it: ran successfully, no heartbeat, no loop rule, unless overridden. */
export const ran = (toolName: string, o: Partial<OutcomeView> = {}): OutcomeView => ({
  toolName,
  kind: 'executed',
  status: 'success',
  requestHeartbeat: false,
  continueLoop: false,
  exitLoop: false,
  returnValue: 'ok',
  ...o,
});
