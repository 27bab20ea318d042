import {
  grantExpiry,
  validateDecisionInput,
} from '../../../../src/core/permissions/consent-decision';
import { ConstraintCompiler } from '../../../../src/core/permissions/constraint';
import { LIMITS } from '../../../support/input-limits';

const constraints = new ConstraintCompiler();
const amountMax100 = { type: 'object', properties: { amount: { type: 'number', maximum: 100 } } };

describe('validateDecisionInput', () => {
  const valid: [string, Record<string, unknown>, unknown][] = [
    ['approve once', { decision: 'approve_once' }, { decision: 'approve_once' }],
    ['deny with a reason', { decision: 'deny', reason: 'no' }, { decision: 'deny', reason: 'no' }],
    [
      'duration with seconds',
      { decision: 'approve_for_duration', seconds: 60 },
      { decision: 'approve_for_duration', seconds: 60 },
    ],
    [
      'scope with a constraint',
      { decision: 'approve_for_scope', constraint: amountMax100 },
      { decision: 'approve_for_scope', constraint: amountMax100 },
    ],
    [
      'null extras are ignored',
      { decision: 'approve_once', seconds: null, constraint: null },
      { decision: 'approve_once' },
    ],
  ];
  it.each(valid)('%s', (_name, raw, expected) => {
    expect(validateDecisionInput(raw, constraints, LIMITS)).toEqual({ ok: true, value: expected });
  });

  const invalid: [string, Record<string, unknown>, string][] = [
    ['missing decision', {}, 'decision'],
    ['unknown decision', { decision: 'approve_forever' }, 'decision'],
    ['decision not a string', { decision: 1 }, 'decision'],
    ['duration without seconds', { decision: 'approve_for_duration' }, 'seconds'],
    ['duration with zero seconds', { decision: 'approve_for_duration', seconds: 0 }, 'seconds'],
    [
      'duration of 1e-300 s (a grant expired at birth)',
      { decision: 'approve_for_duration', seconds: 1e-300 },
      'seconds',
    ],
    ['duration of 1e308 s', { decision: 'approve_for_duration', seconds: 1e308 }, 'seconds'],
    [
      'duration past limits.max_duration_seconds',
      { decision: 'approve_for_duration', seconds: LIMITS.max_duration_seconds + 1 },
      'seconds',
    ],
    ['fractional seconds', { decision: 'approve_for_duration', seconds: 1.5 }, 'seconds'],
    [
      'duration with negative seconds',
      { decision: 'approve_for_duration', seconds: -5 },
      'seconds',
    ],
    ['duration with text seconds', { decision: 'approve_for_duration', seconds: '60' }, 'seconds'],
    [
      'duration with infinite seconds',
      { decision: 'approve_for_duration', seconds: Infinity },
      'seconds',
    ],
    ['seconds on approve_once', { decision: 'approve_once', seconds: 10 }, 'seconds'],
    ['constraint on deny', { decision: 'deny', constraint: amountMax100 }, 'constraint'],
    [
      'constraint on approve_once',
      { decision: 'approve_once', constraint: amountMax100 },
      'constraint',
    ],
    [
      'constraint not an object',
      { decision: 'approve_for_scope', constraint: 'amount<100' },
      'constraint',
    ],
    ['constraint array', { decision: 'approve_for_scope', constraint: [] }, 'constraint'],
    [
      'constraint that does not compile',
      { decision: 'approve_for_scope', constraint: { type: 'nonsense' } },
      'constraint.type',
    ],
    [
      'constraint with a backtracking-only pattern (lookahead)',
      { decision: 'approve_for_scope', constraint: { properties: { s: { pattern: '(?=a)a' } } } },
      'constraint.properties.s.pattern',
    ],
    [
      'constraint with an unknown keyword',
      { decision: 'approve_for_scope', constraint: { properties: { amount: { maximun: 100 } } } },
      'constraint',
    ],
    ['reason not a string', { decision: 'deny', reason: 42 }, 'reason'],
    ['reason too long', { decision: 'deny', reason: 'x'.repeat(2001) }, 'reason'],
    ['reason with a NUL character', { decision: 'deny', reason: 'a\u0000b' }, 'reason'],
  ];
  it.each(invalid)('refuses %s', (_name, raw, path) => {
    const r = validateDecisionInput(raw, constraints, LIMITS);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.map((p) => p.path)).toContain(path);
  });
});

describe('grantExpiry', () => {
  const rows: [string, Parameters<typeof grantExpiry>[0], number | null | undefined][] = [
    ['approve_once creates no grant', { decision: 'approve_once' }, undefined],
    ['deny creates no grant', { decision: 'deny' }, undefined],
    ['scope never expires', { decision: 'approve_for_scope' }, null],
    [
      'duration expires after its seconds',
      { decision: 'approve_for_duration', seconds: 90 },
      1_000 + 90_000,
    ],
    [
      'fractional seconds round to ms',
      { decision: 'approve_for_duration', seconds: 0.0015 },
      1_002,
    ],
  ];
  it.each(rows)('%s', (_name, input, expected) => {
    expect(grantExpiry(input, 1_000)).toBe(expected);
  });
});
