import { CoalescedTimers } from '../../../../src/core/executor/tool-executor';

const DAY = 24 * 3600 * 1000;

describe('CoalescedTimers', () => {
  beforeEach(() => jest.useFakeTimers({ now: 1_000_000 }));
  afterEach(() => jest.useRealTimers());

  it("a deadline past Node's 24.8-day timer ceiling fires then, not at once", () => {
    const timers = new CoalescedTimers();
    const fired = jest.fn();
    timers.setTimeout(fired, 365 * DAY); // a tool timeout of a year (tool_executor.tool_timeout_seconds)
    jest.advanceTimersByTime(1);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(364 * DAY);
    expect(fired).not.toHaveBeenCalled();
    jest.advanceTimersByTime(DAY);
    expect(fired).toHaveBeenCalledTimes(1);
  });

  it('the earliest deadline fires first; a cleared one never does', () => {
    const timers = new CoalescedTimers();
    const order: string[] = [];
    timers.setTimeout(() => order.push('late'), 2000);
    const cleared = timers.setTimeout(() => order.push('cleared'), 1500);
    timers.setTimeout(() => order.push('early'), 1000);
    timers.clearTimeout(cleared);
    jest.advanceTimersByTime(2000);
    expect(order).toEqual(['early', 'late']);
  });
});
