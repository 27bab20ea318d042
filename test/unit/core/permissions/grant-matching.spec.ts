import fc from 'fast-check';
import { ConstraintCompiler } from '../../../../src/core/permissions/constraint';
import {
  CallView,
  findCoveringGrant,
  grantCoverage,
  GrantView,
} from '../../../../src/core/permissions/grant-matching';

const constraints = new ConstraintCompiler();
const NOW = 1_000_000;

const aGrant = (over: Partial<GrantView> = {}): GrantView => ({
  id: 'grant-1',
  agentId: 'agent-a',
  scope: 'payments',
  decision: 'approve_for_scope',
  expiresAt: null,
  constraint: null,
  revokedAt: null,
  createdAt: NOW - 10,
  ...over,
});
const aCall = (over: Partial<CallView> = {}): CallView => ({
  agentId: 'agent-a',
  scope: 'payments',
  arguments: { amount: 50 },
  ...over,
});
const max100 = { type: 'object', properties: { amount: { type: 'number', maximum: 100 } } };

describe('grantCoverage', () => {
  const rows: [string, Partial<GrantView>, Partial<CallView>, ReturnType<typeof grantCoverage>][] =
    [
      ['scope grant covers its scope', {}, {}, { covers: true }],
      ['another agent is not covered', {}, { agentId: 'agent-b' }, { covers: false, why: 'agent' }],
      ['another scope is not covered', {}, { scope: 'email' }, { covers: false, why: 'scope' }],
      [
        'a revoked grant covers nothing',
        { revokedAt: NOW - 1 },
        {},
        { covers: false, why: 'revoked' },
      ],
      ['revocation in the future does not apply yet', { revokedAt: NOW + 1 }, {}, { covers: true }],
      [
        'duration grant before expiry',
        { decision: 'approve_for_duration', expiresAt: NOW + 1 },
        {},
        { covers: true },
      ],
      [
        'duration grant at expiry is over',
        { decision: 'approve_for_duration', expiresAt: NOW },
        {},
        { covers: false, why: 'expired' },
      ],
      [
        'duration grant after expiry',
        { decision: 'approve_for_duration', expiresAt: NOW - 1 },
        {},
        { covers: false, why: 'expired' },
      ],
      [
        'constraint satisfied',
        { constraint: max100 },
        { arguments: { amount: 100 } },
        { covers: true },
      ],
      [
        'constraint violated',
        { constraint: max100 },
        { arguments: { amount: 101 } },
        { covers: false, why: 'constraint' },
      ],
      [
        'constraint with a wrong type',
        { constraint: max100 },
        { arguments: { amount: '5' } },
        { covers: false, why: 'constraint' },
      ],
      [
        'required property missing',
        { constraint: { type: 'object', required: ['to'] } },
        { arguments: {} },
        { covers: false, why: 'constraint' },
      ],
      [
        'a stored constraint that no longer compiles covers nothing',
        { constraint: { type: 'nonsense' } },
        {},
        { covers: false, why: 'constraint' },
      ],
    ];
  it.each(rows)('%s', (_name, grant, call, expected) => {
    expect(grantCoverage(aGrant(grant), aCall(call), NOW, constraints)).toEqual(expected);
  });
});

describe('findCoveringGrant', () => {
  it('prefers the newest covering grant', () => {
    const older = aGrant({ id: 'old', createdAt: 1 });
    const newer = aGrant({ id: 'new', createdAt: 2 });
    expect(findCoveringGrant([older, newer], aCall(), NOW, constraints)?.id).toBe('new');
  });
  it('skips grants that do not cover and finds one that does', () => {
    const grants = [
      aGrant({ id: 'rev', createdAt: 3, revokedAt: 1 }),
      aGrant({
        id: 'tight',
        createdAt: 2,
        constraint: { type: 'object', properties: { amount: { maximum: 10 } } },
      }),
      aGrant({ id: 'ok', createdAt: 1 }),
    ];
    expect(findCoveringGrant(grants, aCall(), NOW, constraints)?.id).toBe('ok');
  });
  it('returns null when nothing covers', () => {
    expect(findCoveringGrant([], aCall(), NOW, constraints)).toBeNull();
  });

  it('property: an amount is covered by a maximum constraint exactly when it is within it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: -1000, max: 1000 }),
        (max, amount) => {
          const g = aGrant({
            constraint: {
              type: 'object',
              properties: { amount: { type: 'number', maximum: max } },
            },
          });
          const covered =
            findCoveringGrant([g], aCall({ arguments: { amount } }), NOW, constraints) !== null;
          return covered === amount <= max;
        },
      ),
    );
  });

  it('property: a grant never covers at or after its expiry, always before it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1e9 }),
        fc.integer({ min: 0, max: 1e9 }),
        (expiresAt, now) => {
          const g = aGrant({ decision: 'approve_for_duration', expiresAt });
          return (findCoveringGrant([g], aCall(), now, constraints) !== null) === now < expiresAt;
        },
      ),
    );
  });
});
