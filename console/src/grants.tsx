import { useEffect, useState } from 'preact/hooks';
import { api, type AuditEntry, type Grant } from './api';
import { clippedText } from './reveal';
import { Clipped, Preview, Revealed } from './revealed';
import { channelName, relative, store, useNow, useStore } from './store';
import { AgentSelect, DataTable, ErrorBanner } from './ui';

function grantState(g: Grant, now: number): 'active' | 'expired' | 'revoked' {
  if (g.revoked_at) return 'revoked';
  if (g.expires_at && Date.parse(g.expires_at) <= now) return 'expired';
  return 'active';
}

/** Standing grants of every agent (or one), with their constraint and expiry; revocable. */
export function Grants() {
  const s = useStore();
  const now = useNow();
  const [agentId, setAgentId] = useState('');
  const [grants, setGrants] = useState<Grant[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    try {
      setGrants(
        await api<Grant[]>('GET', `/v1/grants?limit=1000${agentId ? `&agent_id=${agentId}` : ''}`),
      );
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => {
    void load();
  }, [agentId]);

  const revoke = async (g: Grant) => {
    try {
      await api('DELETE', `/v1/grants/${g.id}`);
      store.notice('ok', `Revoked the grant for ${g.scope}`);
      await load();
    } catch (e) {
      setError((e as Error).message);
    }
  };

  return (
    <section aria-labelledby="grants-title">
      <div class="page-head">
        <div>
          <h1 id="grants-title">Grants</h1>
          <p class="muted">
            Standing consent from “Approve for…” and “Approve for scope”. Revoked grants ask again.
          </p>
        </div>
        <AgentSelect inline value={agentId} onChange={setAgentId} all="All agents" />
      </div>
      <ErrorBanner error={error} />
      <DataTable
        label="Grants"
        rows={grants}
        rowKey={(g) => g.id}
        empty="No grants"
        columns={[
          { head: 'Agent', cell: (g) => <Clipped text={s.agentName(g.agent_id)} /> },
          {
            head: 'Scope',
            cell: (g) => (
              <code>
                <Clipped text={g.scope} />
              </code>
            ),
          },
          {
            head: 'Kind',
            class: 'small',
            cell: (g) => (g.decision === 'approve_for_scope' ? 'for scope' : 'for a duration'),
          },
          {
            head: 'Constraint',
            cell: (g) =>
              g.constraint ? (
                <pre class="json small">
                  <Revealed text={JSON.stringify(g.constraint, null, 2)} lines />
                </pre>
              ) : (
                <span class="muted">any arguments</span>
              ),
          },
          {
            head: 'Expires',
            class: 'small',
            cell: (g) => (g.expires_at ? relative(g.expires_at, now) : 'never'),
          },
          {
            head: 'State',
            cell: (g) => {
              const st = grantState(g, now);
              return <span class={`pill ${st === 'active' ? 'ok' : ''}`}>{st}</span>;
            },
          },
          {
            head: 'Actions',
            hidden: true,
            cell: (g) =>
              grantState(g, now) === 'active' && (
                <button
                  class="btn ghost small"
                  aria-label={`Revoke grant for ${clippedText(s.agentName(g.agent_id))}, scope ${clippedText(g.scope)}`}
                  onClick={() => void revoke(g)}
                >
                  Revoke
                </button>
              ),
          },
        ]}
      />
    </section>
  );
}

const PAGE = 200;
const DECISIONS = ['approve_once', 'approve_for_duration', 'approve_for_scope', 'deny'];
const CHANNELS = ['ws', 'rest', 'webhook', 'system'];

/** The consent audit log, newest first, filterable by agent, tool, decision, channel and time. */
export function Audit() {
  const s = useStore();
  const [f, setF] = useState({ agent: '', tool: '', decision: '', channel: '', from: '', to: '' });
  const [rows, setRows] = useState<AuditEntry[] | null>(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!s.agents) void s.loadAgents();
  }, []);
  const query = (before?: number) => {
    const q = new URLSearchParams({ order: 'desc', limit: String(PAGE) });
    const put = (k: string, v: string) => v && q.set(k, v);
    put('agent_id', f.agent);
    put('tool_name', f.tool);
    put('decision', f.decision);
    put('channel', f.channel);
    // datetime-local is the person's local time
    put('since', f.from && new Date(f.from).toISOString());
    put('until', f.to && new Date(f.to).toISOString());
    if (before !== undefined) q.set('before', String(before));
    return api<AuditEntry[]>('GET', `/v1/consent/audit?${q.toString()}`);
  };
  // every filter goes to the server: the newest matching entries, a page at a time
  useEffect(() => {
    setError(null);
    query().then(
      (r) => {
        setRows(r);
        setMore(r.length === PAGE);
      },
      (e: Error) => setError(e.message),
    );
  }, [f.agent, f.tool, f.decision, f.channel, f.from, f.to]);
  const older = async () => {
    try {
      const r = await query(rows?.[rows.length - 1]?.id);
      setRows((x) => [...(x ?? []), ...r]);
      setMore(r.length === PAGE);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const set = (k: keyof typeof f, v: string) => setF((x) => ({ ...x, [k]: v }));
  const toolNames = [
    ...new Set((s.agents ?? []).flatMap((a) => a.tools.map((t) => t.name))),
  ].sort();
  return (
    <section aria-labelledby="audit-title">
      <div class="page-head">
        <div>
          <h1 id="audit-title">Audit log</h1>
          <p class="muted">Every request, decision, grant use and revocation: who, how and when.</p>
        </div>
      </div>
      <form class="filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <AgentSelect value={f.agent} onChange={(v) => set('agent', v)} all="All" />
        <label>
          <span class="label">Tool</span>
          <select value={f.tool} onChange={(e) => set('tool', e.currentTarget.value)}>
            <option value="">All</option>
            {toolNames.map((n) => (
              <option key={n} value={n}>
                {clippedText(n)}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span class="label">Decision</span>
          <select value={f.decision} onChange={(e) => set('decision', e.currentTarget.value)}>
            <option value="">All</option>
            {DECISIONS.map((d) => (
              <option key={d}>{d}</option>
            ))}
          </select>
        </label>
        <label>
          <span class="label">Channel</span>
          <select value={f.channel} onChange={(e) => set('channel', e.currentTarget.value)}>
            <option value="">All</option>
            {CHANNELS.map((c) => (
              <option key={c}>{c}</option>
            ))}
          </select>
        </label>
        <label>
          <span class="label">From</span>
          <input
            type="datetime-local"
            value={f.from}
            onInput={(e) => set('from', e.currentTarget.value)}
          />
        </label>
        <label>
          <span class="label">To</span>
          <input
            type="datetime-local"
            value={f.to}
            onInput={(e) => set('to', e.currentTarget.value)}
          />
        </label>
      </form>
      <ErrorBanner error={error} />
      <DataTable
        label="Audit entries"
        rows={rows}
        rowKey={(r) => r.id}
        empty="No entries match"
        columns={[
          { head: 'When', class: 'small nowrap', cell: (r) => new Date(r.at).toLocaleString() },
          { head: 'Event', cell: (r) => <span class="pill">{r.event}</span> },
          {
            head: 'Agent',
            class: 'small',
            cell: (r) => <Clipped text={s.agentName(r.agent_id)} />,
          },
          {
            head: 'Tool',
            cell: (r) =>
              r.tool_name && (
                <code>
                  <Clipped text={r.tool_name} />
                </code>
              ),
          },
          {
            head: 'Decision',
            class: 'small',
            cell: (r) => (
              <>
                {r.decision ?? '—'}
                {r.reason && (
                  <div class="muted">
                    “<Preview text={r.reason} max={200} label="the reason" />”
                  </div>
                )}
              </>
            ),
          },
          {
            head: 'By',
            class: 'small',
            cell: (r) => (
              <>
                <Clipped text={r.actor} />{' '}
                <span class="muted">
                  via <Clipped text={channelName(r.channel)} />
                </span>
              </>
            ),
          },
        ]}
      />
      {more && (
        <button class="btn ghost" onClick={() => void older()}>
          Older entries
        </button>
      )}
    </section>
  );
}
