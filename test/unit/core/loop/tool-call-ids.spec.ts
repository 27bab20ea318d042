import { uniqueCallIds } from '../../../../src/core/loop/tool-call-ids';

describe('uniqueCallIds (one model response)', () => {
  const calls = (...ids: string[]) => ids.map((id, i) => ({ id, name: `t${i}` }));
  let n = 0;
  const newId = () => `call-new-${++n}`;

  it('keeps the ids a response gives once, exactly, and the array itself', () => {
    const given = calls('call_abc', 'call_0', 'x');
    expect(uniqueCallIds(given, newId)).toBe(given);
    const none: { id: string }[] = [];
    expect(uniqueCallIds(none, newId)).toBe(none);
  });

  it('gives a repeated id a suffix no other call of the response has; the first keeps it', () => {
    const out = uniqueCallIds(calls('call_0', 'call_0', 'call_0_2', 'call_0'), newId);
    expect(out.map((c) => c.id)).toEqual(['call_0', 'call_0_3', 'call_0_2', 'call_0_4']);
    expect(out.map((c) => c.name)).toEqual(['t0', 't1', 't2', 't3']);
  });

  it('gives a call without an id a new one', () => {
    n = 0;
    expect(uniqueCallIds(calls('', 'call_1', ''), newId).map((c) => c.id)).toEqual([
      'call-new-1',
      'call_1',
      'call-new-2',
    ]);
  });
});
