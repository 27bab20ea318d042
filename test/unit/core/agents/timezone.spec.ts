import {
  formatLocalTime,
  isoInTimeZone,
  timeZoneProblem,
} from '../../../../src/core/agents/timezone';
import { heartbeatText } from '../../../../src/core/loop/heartbeat-message';

describe("an agent's time zone", () => {
  it.each([
    'UTC',
    'America/Los_Angeles',
    'Europe/Berlin',
    'Asia/Kolkata',
    'Etc/GMT+5',
    'US/Pacific',
  ])('%s is a time zone', (zone) => expect(timeZoneProblem(zone)).toBeNull());

  it.each([['Mars/Olympus'], ['+05:00'], ['-0800'], [''], ['x'.repeat(65)], [5], [null], [{}]])(
    '%j is not one',
    (v) => expect(timeZoneProblem(v)).toMatch(/must be an IANA time zone name/),
  );

  it("formats a time as Letta's get_local_time does, in the zone", () => {
    const at = new Date('2025-01-15T17:30:05.123Z');
    expect(formatLocalTime(at, 'UTC')).toBe('2025-01-15 05:30:05 PM UTC+0000');
    expect(formatLocalTime(at, 'America/Los_Angeles')).toBe('2025-01-15 09:30:05 AM PST-0800');
    // a zone English has no abbreviation for is named by its offset, as the tz database names it
    expect(formatLocalTime(at, 'Asia/Kolkata')).toBe('2025-01-15 11:00:05 PM +0530+0530');
    expect(formatLocalTime(new Date('2025-07-01T12:05:00Z'), 'America/New_York')).toBe(
      '2025-07-01 08:05:00 AM EDT-0400',
    );
    expect(formatLocalTime(new Date('2025-07-01T00:05:00Z'), 'UTC')).toBe(
      '2025-07-01 12:05:00 AM UTC+0000',
    );
    // a stored zone that is not one (never written by the API) reads as UTC
    expect(formatLocalTime(at, 'Mars/Olympus')).toBe('2025-01-15 05:30:05 PM UTC+0000');
  });

  it('ISO 8601 in the zone, with its offset', () => {
    const at = new Date('2025-01-15T17:30:05.123Z');
    expect(isoInTimeZone(at, 'UTC')).toBe('2025-01-15T17:30:05.123+00:00');
    expect(isoInTimeZone(at, 'America/Los_Angeles')).toBe('2025-01-15T09:30:05.123-08:00');
    expect(isoInTimeZone(at, 'Asia/Kathmandu')).toBe('2025-01-15T23:15:05.123+05:45');
    expect(new Date(isoInTimeZone(at, 'Asia/Kathmandu')).getTime()).toBe(at.getTime());
  });

  it("a heartbeat's time is in the agent's zone", () => {
    const at = new Date('2025-01-15T17:30:05Z');
    expect(JSON.parse(heartbeatText('lookup', at, 'America/Los_Angeles')).time).toBe(
      '2025-01-15 09:30:05 AM PST-0800',
    );
  });
});
