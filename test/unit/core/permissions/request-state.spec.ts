import {
  CONSUMED_REASON,
  DEFAULT_DENY_REASON,
  dueForExpiry,
  recheckAction,
  RequestStateView,
} from '../../../../src/core/permissions/request-state';

const NOW = 10_000;
const state = (over: Partial<RequestStateView>): RequestStateView => ({
  status: 'pending',
  decision: null,
  decisionReason: null,
  expiresAt: NOW + 1000,
  consumedAt: null,
  ...over,
});

describe('recheckAction', () => {
  const rows: [string, Partial<RequestStateView>, ReturnType<typeof recheckAction>][] = [
    ['pending before expiry stays pending', {}, { action: 'pending' }],
    ['pending at expiry expires', { expiresAt: NOW }, { action: 'expire' }],
    ['pending after expiry expires', { expiresAt: NOW - 1 }, { action: 'expire' }],
    [
      'approved once, unused: consume',
      { status: 'approved', decision: 'approve_once' },
      { action: 'consume' },
    ],
    [
      'approved for scope, unused: consume',
      { status: 'approved', decision: 'approve_for_scope' },
      { action: 'consume' },
    ],
    [
      'approved but already used: fail closed',
      { status: 'approved', decision: 'approve_once', consumedAt: NOW - 5 },
      { action: 'denied', reason: CONSUMED_REASON },
    ],
    [
      'approval is never consumed twice even past expiry',
      { status: 'approved', decision: 'approve_once', consumedAt: 1, expiresAt: 0 },
      { action: 'denied', reason: CONSUMED_REASON },
    ],
    [
      'denied with a reason',
      { status: 'denied', decision: 'deny', decisionReason: 'too expensive' },
      { action: 'denied', reason: 'too expensive' },
    ],
    [
      'denied without a reason',
      { status: 'denied', decision: 'deny' },
      { action: 'denied', reason: DEFAULT_DENY_REASON },
    ],
    [
      'timed out',
      { status: 'denied', decision: 'deny', decisionReason: 'timeout' },
      { action: 'denied', reason: 'timeout' },
    ],
  ];
  it.each(rows)('%s', (_name, over, expected) => {
    expect(recheckAction(state(over), NOW)).toEqual(expected);
  });
});

describe('dueForExpiry', () => {
  it('keeps those at or past their expiry, oldest first', () => {
    const reqs = [
      { id: 'late', expiresAt: NOW + 1 },
      { id: 'b', expiresAt: NOW },
      { id: 'a', expiresAt: NOW - 100 },
    ];
    expect(dueForExpiry(reqs, NOW).map((r) => r.id)).toEqual(['a', 'b']);
  });
});
