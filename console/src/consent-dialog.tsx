import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type ConsentRequest, type Resolved } from './api';
import { Arguments } from './arguments';
import { clippedText, hasHidden, NAME_MAX } from './reveal';
import { Clipped, Preview, Revealed } from './revealed';
import {
  constrainable,
  defaultCondition,
  OPS_FOR,
  toSchema,
  type Condition,
  type Kind,
} from './constraint';
import { live } from './live';
import { countdown, store, useNow } from './store';
import { ErrorBanner } from './ui';

const DURATIONS = [
  { seconds: 300, label: '5 minutes' },
  { seconds: 600, label: '10 minutes' },
  { seconds: 3600, label: '1 hour' },
  { seconds: 8 * 3600, label: '8 hours' },
  { seconds: 86400, label: '24 hours' },
];

const FOCUSABLE = 'button:not([disabled]), input:not([disabled]), select:not([disabled]), [href]';

/** Tab cycles inside the dialog (a modal <dialog> alone lets focus leave for the browser's toolbar). */
function trapTab(e: KeyboardEvent) {
  if (e.key !== 'Tab') return;
  const all = [...(e.currentTarget as HTMLElement).querySelectorAll<HTMLElement>(FOCUSABLE)];
  const [first, last] = [all[0], all[all.length - 1]];
  const at = document.activeElement;
  if (!e.shiftKey && (at === last || !all.includes(at as HTMLElement))) {
    e.preventDefault();
    first?.focus();
  } else if (e.shiftKey && (at === first || !all.includes(at as HTMLElement))) {
    e.preventDefault();
    last?.focus();
  }
}

interface Props {
  request: ConsentRequest;
  onClose: () => void;
}

/**
 * One consent request and the four answers. Sent over the WebSocket (REST when it is down); when anyone
 * decides (here, elsewhere, or the expiry) the inbox drops the request and this dialog closes.
 */
export function ConsentDialog({ request: r, onClose }: Props) {
  const ref = useRef<HTMLDialogElement>(null);
  const now = useNow();
  const [seconds, setSeconds] = useState(600);
  const [reason, setReason] = useState('');
  const [conditions, setConditions] = useState<Condition[]>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fields = useMemo(() => constrainable(r.arguments), [r.arguments]);
  const kinds = useMemo(
    () => Object.fromEntries(fields.map((f) => [f.field, f.kind])) as Record<string, Kind>,
    [fields],
  );
  const { schema, problems } = toSchema(conditions, kinds);
  const expired = Date.parse(r.expires_at) <= now;
  const refused = store.refused.get(r.id);

  // the server refused the decision sent over the WebSocket: say why here, and let the person answer again
  useEffect(() => {
    if (refused === undefined) return;
    store.refused.delete(r.id);
    setError(refused);
    setBusy(false);
  }, [refused]);

  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);

  const decide = async (body: Record<string, unknown>) => {
    setBusy(true);
    setError(null);
    try {
      if (!live.send({ type: 'consent.decision', request_id: r.id, ...body }))
        store.settle(
          r.id,
          await api<Resolved & { status: string; decision_reason: string | null }>(
            'POST',
            `/v1/consent/requests/${r.id}/decision`,
            body,
          ),
        );
      // the consent.resolved frame (or the REST answer's) closes the dialog through the inbox
    } catch (e) {
      // fetch rejects with a TypeError when the server cannot be reached: say that nothing was decided
      setError(
        e instanceof TypeError
          ? 'The server could not be reached; nothing was decided. Try again when the console shows Live.'
          : (e as Error).message,
      );
      setBusy(false);
    }
  };

  const toggle = (field: string, kind: Kind, value: unknown, on: boolean) =>
    setConditions((cs) =>
      on ? [...cs, defaultCondition(field, kind, value)] : cs.filter((c) => c.field !== field),
    );
  const update = (field: string, patch: Partial<Condition>) =>
    setConditions((cs) => cs.map((c) => (c.field === field ? { ...c, ...patch } : c)));
  const grantExtras = schema && problems.length === 0 ? { constraint: schema } : {};
  const blocked = busy || expired || problems.length > 0;
  const titleId = `dlg-${r.id}`;
  const agentName = store.agentName(r.agent_id);
  const flagged = [
    ['the agent name', agentName],
    ['the tool name', r.tool_name],
    ['the scope', r.scope],
    ['the tool call id', r.tool_call_id],
  ].filter(([, text]) => hasHidden(text));

  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
      onKeyDown={trapTab}
    >
      <header class="dialog-head">
        <div>
          <p class="eyebrow">Consent request</p>
          {/* names cut short here, whole below: a long or padded name cannot hide the tool */}
          <h2 id={titleId}>
            <Clipped text={agentName} max={40} /> wants to run{' '}
            <code>
              <Clipped text={r.tool_name} />
            </code>
          </h2>
        </div>
        <span class={`countdown ${expired ? 'is-expired' : ''}`} role="timer" aria-live="off">
          {expired ? 'expired' : `expires in ${countdown(r.expires_at, now)}`}
        </span>
      </header>
      {flagged.length > 0 && (
        <p class="args-warn" role="note">
          {`⚠ ${flagged.map(([what]) => what).join(', ')}: invisible or direction characters (shown as \\u… escapes)`}
        </p>
      )}
      <p class="muted">
        <Preview text={r.reason} max={300} label="the reason" />
      </p>
      <dl class="facts">
        <dt>Agent</dt>
        <dd>
          <Preview text={agentName} max={NAME_MAX} label="the agent name" />{' '}
          <code class="small">{r.agent_id}</code>
        </dd>
        <dt>Scope</dt>
        <dd>
          <code>
            <Preview text={r.scope} max={NAME_MAX} label="the scope" />
          </code>
        </dd>
        <dt>Tool call</dt>
        <dd>
          <code>
            <Preview text={r.tool_call_id} max={NAME_MAX} label="the tool call id" />
          </code>
        </dd>
      </dl>
      <h3>Arguments</h3>
      <Arguments args={r.arguments} />

      {fields.length > 0 && (
        <fieldset class="constraint">
          <legend>Constraint for a standing grant (optional)</legend>
          <p class="hint">
            Approve for a duration or for the scope covers later calls only when their arguments
            match.
          </p>
          {fields.map(({ field, kind, value }) => {
            const c = conditions.find((x) => x.field === field);
            const id = `c-${field}`;
            return (
              <div class="constraint-row" key={field}>
                <label class="check">
                  <input
                    type="checkbox"
                    checked={!!c}
                    onChange={(e) => toggle(field, kind, value, e.currentTarget.checked)}
                  />
                  <code>
                    <Clipped text={field} max={40} />
                  </code>
                </label>
                {c && (
                  <>
                    <select
                      aria-label={`Condition on ${clippedText(field, 40)}`}
                      value={c.op}
                      onChange={(e) =>
                        update(field, { op: e.currentTarget.value as Condition['op'] })
                      }
                    >
                      {OPS_FOR[kind].map((o) => (
                        <option value={o.op} key={o.op}>
                          {o.label}
                        </option>
                      ))}
                    </select>
                    {kind === 'boolean' ? (
                      <select
                        id={id}
                        aria-label={`Value for ${clippedText(field, 40)}`}
                        value={c.value}
                        onChange={(e) => update(field, { value: e.currentTarget.value })}
                      >
                        <option value="true">true</option>
                        <option value="false">false</option>
                      </select>
                    ) : (
                      <input
                        id={id}
                        aria-label={`Value for ${clippedText(field, 40)}`}
                        inputMode={kind === 'number' ? 'decimal' : undefined}
                        value={c.value}
                        onInput={(e) => update(field, { value: e.currentTarget.value })}
                      />
                    )}
                  </>
                )}
              </div>
            );
          })}
          {schema && (
            <>
              <p class="hint">As JSON Schema (what the grant stores):</p>
              <pre class="json" aria-label="Constraint as JSON Schema">
                <Revealed text={JSON.stringify(schema, null, 2)} lines />
              </pre>
            </>
          )}
          {problems.map((p) => (
            <p class="field-error" key={p}>
              {p}
            </p>
          ))}
        </fieldset>
      )}

      <ErrorBanner error={error} />

      <div class="decisions">
        <button
          class="btn primary"
          disabled={blocked}
          onClick={() => void decide({ decision: 'approve_once' })}
        >
          Approve once
        </button>
        <div class="split">
          <button
            class="btn"
            disabled={blocked}
            onClick={() =>
              void decide({ decision: 'approve_for_duration', seconds, ...grantExtras })
            }
          >
            Approve for…
          </button>
          <select
            aria-label="Duration"
            value={seconds}
            onChange={(e) => setSeconds(Number(e.currentTarget.value))}
          >
            {DURATIONS.map((d) => (
              <option value={d.seconds} key={d.seconds}>
                {d.label}
              </option>
            ))}
          </select>
        </div>
        <button
          class="btn"
          disabled={blocked}
          onClick={() => void decide({ decision: 'approve_for_scope', ...grantExtras })}
        >
          Approve for scope
        </button>
      </div>
      <div class="deny-row">
        <label class="grow">
          <span class="label">Reason for denying</span>
          <input
            value={reason}
            maxLength={2000}
            placeholder="e.g. amount too high"
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </label>
        <button
          class="btn danger"
          disabled={busy || expired}
          onClick={() => void decide({ decision: 'deny', ...(reason ? { reason } : {}) })}
        >
          Deny
        </button>
      </div>
      <footer class="dialog-foot">
        <button class="btn ghost" onClick={onClose}>
          Close
        </button>
      </footer>
    </dialog>
  );
}
