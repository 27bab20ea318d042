import { hasHidden, clippedText, valueText } from './reveal';
import { Preview } from './revealed';

/**
 * A call's arguments as a person must see them to decide: one row per top-level key, each key and the
 * start of its value always on screen (long values are cut to a preview that opens on request), every
 * invisible, direction-control or unusual-space character shown as its escape, and a warning when there
 * is one. Never markup from the data: text nodes only.
 */
export function Arguments({
  args,
  compact = false,
}: {
  args: Record<string, unknown>;
  compact?: boolean;
}) {
  const rows = Object.entries(args ?? {}).map(([key, value]) => ({
    key,
    value: valueText(value),
  }));
  const flagged = rows.filter((r) => hasHidden(r.key) || hasHidden(r.value));
  const max = compact ? 80 : 160;
  return (
    <div class={`args ${compact ? 'small' : ''}`}>
      {flagged.length > 0 && (
        <p class="args-warn" role="note">
          {'⚠ contains invisible or direction characters (shown as \\u… escapes) in '}
          {flagged.map((r, i) => (
            <span key={i}>
              {i > 0 && ', '}
              <code>
                <Preview text={r.key} max={40} label="the key" />
              </code>
            </span>
          ))}
        </p>
      )}
      {rows.length === 0 ? (
        <p class="muted small">no arguments</p>
      ) : (
        <dl class="args-list" aria-label="Arguments">
          {rows.map((r, i) => (
            <div class={`arg ${flagged.includes(r) ? 'is-flagged' : ''}`} key={i}>
              <dt>
                <Preview text={r.key} max={40} label="the key" />
              </dt>
              <dd>
                <Preview
                  text={r.value}
                  max={max}
                  label={`the value of ${clippedText(r.key, 40)}`}
                />
              </dd>
            </div>
          ))}
        </dl>
      )}
    </div>
  );
}
