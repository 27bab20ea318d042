import type { TurnView } from '../../../../src/core/loop/loop-decision';
import { StoredEnd, storedEnd, StoredRun } from '../../../../src/core/loop/stored-end';
import { ran, view as turn } from './turn-views';

const stored = (t: TurnView | null, o: Partial<StoredRun> = {}): StoredRun => ({
  turn: t,
  after: 'nothing',
  budgets: { maxSteps: 50, maxTokens: null, maxBatchMs: 600_000, modelCallTimeoutMs: undefined },
  spent: { steps: 1, tokens: 100 },
  ...o,
});

const end = (stopReason: StoredEnd['stopReason'], detail: string | null = null) => ({
  stopReason,
  detail,
});
const maxSteps = {
  budgets: { ...stored(null).budgets, maxSteps: 2 },
  spent: { steps: 2, tokens: 0 },
};

describe('storedEnd: how a run whose end was not stored ended, from what it stored', () => {
  const rows: [string, StoredRun, StoredEnd | null][] = [
    ['an answer without a call, nothing after it', stored(turn([])), end('end_turn')],
    ['a call without heartbeat (MemGPT loop)', stored(turn([ran('lookup')])), end('end_turn')],
    [
      'an exit_loop call that asked for a heartbeat',
      stored(turn([ran('done', { exitLoop: true, requestHeartbeat: true })])),
      end('tool_rule'),
    ],
    [
      'an exit_loop call in the v1 loop',
      stored(turn([ran('done', { exitLoop: true })], { continueAfterTools: true })),
      end('tool_rule'),
    ],
    [
      'exit requirements pending after the last reminder',
      stored(turn([], { pendingExitRequirements: ['audit'], remindersGiven: 3 })),
      end('tool_rule_violation'),
    ],
    [
      'an end decided, but something stored after it: not this decision',
      stored(turn([]), { after: 'heartbeat' }),
      null,
    ],
    [
      'a call that waits: read from its approval request',
      stored(turn([ran('pay', { kind: 'consent_required' })])),
      null,
    ],
    [
      'the loop goes on (continue_loop), budgets left: interrupted',
      stored(turn([ran('a', { continueLoop: true })])),
      null,
    ],
    [
      'the loop goes on, max_steps used up',
      stored(turn([ran('a', { continueLoop: true })]), maxSteps),
      end('max_steps'),
    ],
    [
      'the loop goes on, the token budget used up',
      stored(turn([ran('a', { continueLoop: true })]), {
        budgets: { ...stored(null).budgets, maxTokens: 100 },
      }),
      end('max_tokens_exceeded', 'token budget of 100 per batch reached (100 used)'),
    ],
    [
      'a reminder decided and stored, then max_steps',
      stored(turn([], { pendingExitRequirements: ['audit'] }), { ...maxSteps, after: 'reminder' }),
      end('max_steps'),
    ],
    [
      'a reminder decided but not stored',
      stored(turn([], { pendingExitRequirements: ['audit'] }), maxSteps),
      null,
    ],
    [
      'a heartbeat decided and stored, then max_steps',
      stored(turn([ran('a', { requestHeartbeat: true })]), { ...maxSteps, after: 'heartbeat' }),
      end('max_steps'),
    ],
    [
      'a heartbeat decided but not stored',
      stored(turn([ran('a', { requestHeartbeat: true })]), maxSteps),
      null,
    ],
    ['no turn yet, budgets left', stored(null), null],
    ['no turn yet, max_steps used up (a resumed batch)', stored(null, maxSteps), end('max_steps')],
  ];
  it.each(rows)('%s', (_name, run, expected) => {
    expect(storedEnd(run)).toEqual(expected);
  });
});
