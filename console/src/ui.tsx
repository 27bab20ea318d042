import type { ComponentChildren } from 'preact';
import { clippedText } from './reveal';
import { Revealed } from './revealed';
import { useStore } from './store';

/** The shared pieces of every page: an error banner, the loading/empty states, a table, the agent picker. */

export function ErrorBanner({ error }: { error: string | null }) {
  if (!error) return null;
  return (
    <p class="banner is-error" role="alert">
      <Revealed text={error} />
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children && <p class="muted">{children}</p>}
    </div>
  );
}

export const Loading = () => <p class="muted">Loading…</p>;

export interface Column<T> {
  /** The header's text (also the cell's label on a phone, where rows stack). */
  head: string;
  cell: (row: T) => ComponentChildren;
  class?: string;
  /** A header read only by screen readers (an actions column). */
  hidden?: boolean;
}

/**
 * A table of rows: `null` rows show as loading, none as `empty`. On a phone each row stacks into a card
 * with the column names beside the values (styles.css, `.table.stack`).
 */
export function DataTable<T>({
  label,
  columns,
  rows,
  rowKey,
  empty,
}: {
  label: string;
  columns: Column<T>[];
  rows: T[] | null;
  rowKey: (row: T) => string | number;
  empty: string;
}) {
  if (rows === null) return <Loading />;
  if (rows.length === 0) return <Empty title={empty} />;
  return (
    <div class="table-wrap">
      <table class="table stack" aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.head}>
                {c.hidden ? <span class="sr-only">{c.head}</span> : c.head}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={rowKey(r)}>
              {columns.map((c) => (
                <td key={c.head} class={c.class} data-label={c.hidden ? undefined : c.head}>
                  <div class="cell">{c.cell(r)}</div>
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A select of the tenant's agents; `all` names the empty choice (none: a required choice). */
export function AgentSelect({
  value,
  onChange,
  all,
  label = 'Agent',
  inline = false,
}: {
  value: string;
  onChange: (id: string) => void;
  all?: string;
  label?: string;
  inline?: boolean;
}) {
  const s = useStore();
  return (
    <label class={inline ? 'inline' : undefined}>
      <span class="label">{label}</span>
      <select value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        {all ? (
          <option value="">{all}</option>
        ) : (
          <option value="" disabled>
            Choose an agent
          </option>
        )}
        {(s.agents ?? []).map((a) => (
          <option key={a.id} value={a.id}>
            {clippedText(a.name)}
          </option>
        ))}
      </select>
    </label>
  );
}
