/**
 * An agent's time zone (Letta's `timezone`, an IANA name such as `America/New_York`): kept with the
 * agent, and used where this server writes a time the model reads (a heartbeat's `time`, the dates of
 * `conversation_search` results), as Letta formats them for the agent's zone.
 */

/** Letta's default (`DEFAULT_TIMEZONE`): an agent created without one is in UTC. */
export const DEFAULT_TIMEZONE = 'UTC';

/** The longest zone name kept (IANA names are at most about 30 characters). */
export const MAX_TIMEZONE_LENGTH = 64;

const formatters = new Map<string, { local: Intl.DateTimeFormat; offset: Intl.DateTimeFormat }>();
/** Zones formatted so far are few (the IANA database has ~600 names and aliases); bounded anyway. */
const MAX_FORMATTERS = 1000;

function formattersFor(timeZone: string) {
  let f = formatters.get(timeZone);
  if (!f) {
    f = {
      local: new Intl.DateTimeFormat('en-US', {
        timeZone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hour12: true,
        timeZoneName: 'short',
      }),
      offset: new Intl.DateTimeFormat('en-US', { timeZone, timeZoneName: 'longOffset' }),
    };
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * Why `v` is not a time zone this server can keep, or null when it is one. An IANA name that the
 * runtime's time zone database knows; offsets (`+05:00`) and abbreviations the database does not name
 * are refused, as Letta's zone lookup refuses them.
 */
export function timeZoneProblem(v: unknown): string | null {
  const message = 'must be an IANA time zone name, such as "UTC" or "America/New_York"';
  if (typeof v !== 'string' || v === '' || v.length > MAX_TIMEZONE_LENGTH || /^[+-]/.test(v))
    return message;
  try {
    formattersFor(v);
    return null;
  } catch {
    return `${message}; ${JSON.stringify(v)} is not one`;
  }
}

type Parts = Partial<Record<Intl.DateTimeFormatPartTypes, string>>;
const partsOf = (f: Intl.DateTimeFormat, at: Date): Parts => {
  const out: Parts = {};
  for (const p of f.formatToParts(at)) out[p.type] = p.value;
  return out;
};

/** `+hh:mm` (`+00:00` for UTC) of the zone at that instant. */
function offsetOf(timeZone: string, at: Date): string {
  const name = partsOf(formattersFor(timeZone).offset, at).timeZoneName ?? 'GMT';
  const m = /^GMT([+-])(\d{2}):?(\d{2})?$/.exec(name);
  return m ? `${m[1]}${m[2]}:${m[3] ?? '00'}` : '+00:00';
}

/**
 * The instant as Letta writes times for the model (`get_local_time`: `%Y-%m-%d %I:%M:%S %p %Z%z`), in
 * the agent's zone: `2025-01-15 09:30:00 AM PST-0800`. A zone that is not one (a row written before
 * zones were checked) is UTC.
 */
export function formatLocalTime(at: Date, timeZone: string | null | undefined): string {
  const zone = timeZone && timeZoneProblem(timeZone) === null ? timeZone : DEFAULT_TIMEZONE;
  // ICU's formatToParts costs microseconds and every tool return writes a time: one text per zone and second
  const second = Math.floor(at.getTime() / 1000);
  const last = lastLocal.get(zone);
  if (last?.second === second) return last.text;
  const text = localTime(at, zone);
  if (lastLocal.size >= MAX_FORMATTERS) lastLocal.clear();
  lastLocal.set(zone, { second, text });
  return text;
}

const lastLocal = new Map<string, { second: number; text: string }>();

function localTime(at: Date, zone: string): string {
  const p = partsOf(formattersFor(zone).local, at);
  const offset = offsetOf(zone, at).replace(':', '');
  // a zone without an abbreviation in English is named by its offset, as the tz database names it (`+0530`, `-05`)
  const name =
    p.timeZoneName && !/^GMT[+-]/.test(p.timeZoneName)
      ? p.timeZoneName
      : offset.endsWith('00')
        ? offset.slice(0, 3)
        : offset;
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second} ${p.dayPeriod} ${name}${offset}`;
}

/** ISO 8601 in the agent's zone, with its offset (`2025-01-15T09:30:00.000-08:00`), as Python's isoformat. */
export function isoInTimeZone(at: Date, timeZone: string | null | undefined): string {
  const zone = timeZone && timeZoneProblem(timeZone) === null ? timeZone : DEFAULT_TIMEZONE;
  const offset = offsetOf(zone, at);
  const [, sign, hh, mm] = /^([+-])(\d{2}):(\d{2})$/.exec(offset)!;
  const shift = (sign === '-' ? -1 : 1) * (Number(hh) * 60 + Number(mm)) * 60_000;
  return new Date(at.getTime() + shift).toISOString().replace('Z', offset);
}
