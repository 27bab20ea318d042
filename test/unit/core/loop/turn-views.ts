import type { OutcomeView, TurnView } from '../../../../src/core/loop/loop-decision';

/** A call that ran and succeeded, as the loop decision sees it (override any field). */
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

/** A turn of these outcomes in the MemGPT loop, nothing pending, no reminder given yet. */
export const view = (outcomes: OutcomeView[], o: Partial<TurnView> = {}): TurnView => ({
  outcomes,
  pendingExitRequirements: [],
  exitRequested: false,
  rules: [],
  continueAfterTools: false,
  remindersGiven: 0,
  maxReminders: 3,
  ...o,
});
