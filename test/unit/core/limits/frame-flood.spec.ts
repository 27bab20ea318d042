import { Flood, refuseFrame } from '../../../../src/core/limits/frame-flood';

/** Refuses a frame at each time given (ms): whether each was told and whether the last closed. */
function drive(rate: number, times: number[]) {
  let flood: Flood | undefined;
  const warned: number[] = [];
  let close = false;
  for (const at of times) {
    const r = refuseFrame(flood, rate, at);
    flood = r.flood;
    if (r.warn) warned.push(at);
    close = r.close;
  }
  return { warned, close, refused: flood?.refused ?? 0 };
}

describe('refuseFrame', () => {
  it.each([
    ['a burst of rate refusals: told once, kept open', 3, [0, 0, 0], [0], false, 3],
    ['one refusal past the rate: closed', 3, [0, 0, 0, 0], [0], true, 4],
    // the QA flood: refusals spread over seconds, frames accepted between them, never a quiet second
    [
      'refusals 600 ms apart: one flood, told once a second, closed',
      3,
      [0, 600, 1200, 1800],
      [0, 1200],
      true,
      4,
    ],
    [
      'a quiet second ends the flood: counted afresh, told again',
      3,
      [0, 0, 0, 1001, 1001],
      [0, 1001],
      false,
      2,
    ],
    ['exactly a second apart is still the same flood', 1, [0, 1000], [0, 1000], true, 2],
  ])('%s', (_name, rate, times, warned, close, refused) => {
    expect(drive(rate, times)).toEqual({ warned, close, refused });
  });
});
