import { FairSlots, type SlotLimits } from '../../../../src/core/limits/fair-slots';

/**
 * `A3`: tenant A's item 3 arrives; `-A`: one of A's running items ends; `drain`: shutting down. Answers what
 * started (in order), what was refused (`!A3`) and what drained (`~A3`).
 */
function drive(limits: SlotLimits, steps: string[]): string[] {
  const slots = new FairSlots<string>(limits);
  const log: string[] = [];
  for (const s of steps) {
    if (s === 'drain') log.push(...slots.drain().map((i) => `~${i}`));
    else if (s.startsWith('-')) log.push(...slots.done(s.slice(1)).map((g) => g.item));
    else {
      const got = slots.push(s[0], s);
      if (got === 'start') log.push(s);
      if (got === 'refused') log.push(`!${s}`);
    }
  }
  return log;
}

const L = { total: 3, perTenant: 2, maxWaiting: 2 };

describe('FairSlots: a concurrency bound shared between tenants', () => {
  it.each<[string, SlotLimits, string[], string[]]>([
    ['under the bounds, each starts at once', L, ['A1', 'B1', 'A2'], ['A1', 'B1', 'A2']],
    [
      'a tenant holds its share; its next ones wait and start, in order, as its own end',
      L,
      ['A1', 'A2', 'A3', 'A4', '-A', '-A'],
      ['A1', 'A2', 'A3', 'A4'],
    ],
    [
      "past its waiting bound a tenant's item is refused; another tenant's is not",
      L,
      ['A1', 'A2', 'A3', 'A4', 'A5', 'B1'],
      ['A1', 'A2', '!A5', 'B1'],
    ],
    [
      'every slot held: a freed slot goes to the tenant with the fewest running, not the backlog it freed from',
      L,
      ['A1', 'A2', 'C1', 'A3', 'C2', 'B1', '-A'],
      ['A1', 'A2', 'C1', 'B1'],
    ],
    [
      'fewest running alike: the item waiting longest goes first',
      { ...L, total: 2 },
      ['A1', 'A2', 'B1', 'C1', '-A', '-A'],
      ['A1', 'A2', 'B1', 'C1'],
    ],
    [
      'an item that arrives while its tenant has some waiting waits behind them',
      L,
      ['A1', 'A2', 'A3', 'B1', '-B', 'A4', '-A'],
      ['A1', 'A2', 'B1', 'A3'],
    ],
    [
      'drain: the waiting ones, oldest first; none starts after',
      L,
      ['A1', 'A2', 'A3', 'B1', 'B2', 'drain', '-A'],
      ['A1', 'A2', 'B1', '~A3', '~B2'],
    ],
    [
      'a waiting bound of 0 refuses whatever finds no slot',
      { ...L, maxWaiting: 0 },
      ['A1', 'A2', 'A3'],
      ['A1', 'A2', '!A3'],
    ],
  ])('%s', (_name, limits, steps, log) => {
    expect(drive(limits, steps)).toEqual(log);
  });
});
