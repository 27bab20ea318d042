import { useEffect, useState } from 'preact/hooks';
import { api, type AuditEntry, type Grant } from './api';
import { channelName, relative, store, useNow, useStore } from './store';

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
      const agents = s.agents ?? (await s.loadAgents());
      const ids = agentId ? [agentId] : agents.map((a) => a.id);
      const lists = await Promise.all(
        ids.map((id) => api<Grant[]>('GET', `/v1/agents/${id}/grants`)),
      );
      setGrants(lists.flat().sort((a, b) => b.created_at.localeCompare(a.created_at)));
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
        <label class="inline">
          <span class="label">Agent</span>
          <select value={agentId} onChange={(e) => setAgentId(e.currentTarget.value)}>
            <option value="">All agents</option>
            {(s.agents ?? []).map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <p class="banner is-error" role="alert">
          {error}
        </p>
      )}
      {grants === null ? (
        <p class="muted">Loading…</p>
      ) : grants.length === 0 ? (
        <div class="empty">
          <p class="empty-title">No grants</p>
        </div>
      ) : (
        <div class="table-wrap">
          <table class="table" aria-label="Grants">
            <thead>
              <tr>
                <th scope="col">Agent</th>
                <th scope="col">Scope</th>
                <th scope="col">Kind</th>
                <th scope="col">Constraint</th>
                <th scope="col">Expires</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {grants.map((g) => {
                const st = grantState(g, now);
                return (
                  <tr key={g.id}>
                    <td>{s.agentName(g.agent_id)}</td>
                    <td>
                      <code>{g.scope}</code>
                    </td>
                    <td class="small">
                      {g.decision === 'approve_for_scope' ? 'for scope' : 'for a duration'}
                    </td>
                    <td>
                      {g.constraint ? (
                        <pre class="json small">{JSON.stringify(g.constraint, null, 2)}</pre>
                      ) : (
                        <span class="muted">any arguments</span>
                      )}
                    </td>
                    <td class="small">{g.expires_at ? relative(g.expires_at, now) : 'never'}</td>
                    <td>
                      <span class={`pill ${st === 'active' ? 'ok' : ''}`}>{st}</span>
                    </td>
                    <td>
                      {st === 'active' && (
                        <button
                          class="btn ghost small"
                          aria-label={`Revoke grant for ${g.scope}`}
                          onClick={() => void revoke(g)}
                        >
                          Revoke
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

const DECISIONS = ['approve_once', 'approve_for_duration', 'approve_for_scope', 'deny'];
const CHANNELS = ['ws', 'rest', 'webhook', 'system'];

/** The consent audit log, newest first, filterable by agent, tool, decision, channel and time. */
export function Audit() {
  const s = useStore();
  const [f, setF] = useState({ agent: '', tool: '', decision: '', channel: '', from: '', to: '' });
  const [rows, setRows] = useState<AuditEntry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!s.agents) void s.loadAgents();
  }, []);
  useEffect(() => {
    // the agent filter goes to the server; the others narrow what it returned (up to 1000 entries)
    api<AuditEntry[]>(
      'GET',
      `/v1/consent/audit?limit=1000${f.agent ? `&agent_id=${f.agent}` : ''}`,
    ).then(
      (r) => setRows(r.reverse()),
      (e: Error) => setError(e.message),
    );
  }, [f.agent]);
  const set = (k: keyof typeof f, v: string) => setF((x) => ({ ...x, [k]: v }));
  const from = f.from ? Date.parse(f.from) : -Infinity;
  const to = f.to ? Date.parse(f.to) : Infinity;
  const shown = (rows ?? []).filter(
    (r) =>
      (!f.tool || (r.tool_name ?? '').includes(f.tool)) &&
      (!f.decision || r.decision === f.decision) &&
      (!f.channel || r.channel === f.channel) &&
      Date.parse(r.at) >= from &&
      Date.parse(r.at) <= to,
  );
  return (
    <section aria-labelledby="audit-title">
      <div class="page-head">
        <div>
          <h1 id="audit-title">Audit log</h1>
          <p class="muted">Every request, decision, grant use and revocation: who, how and when.</p>
        </div>
      </div>
      <form class="filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label>
          <span class="label">Agent</span>
          <select value={f.agent} onChange={(e) => set('agent', e.currentTarget.value)}>
            <option value="">All</option>
            {(s.agents ?? []).map((a) => (
              <option key={a.id} value={a.id}>
                {a.name}
              </option>
            ))}
          </select>
        </label>
        <label>
          <span class="label">Tool</span>
          <input value={f.tool} onInput={(e) => set('tool', e.currentTarget.value)} />
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
      {error && (
        <p class="banner is-error" role="alert">
          {error}
        </p>
      )}
      {rows === null ? (
        <p class="muted">Loading…</p>
      ) : (
        <div class="table-wrap">
          <table class="table" aria-label="Audit entries">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Agent</th>
                <th scope="col">Tool</th>
                <th scope="col">Decision</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((r) => (
                <tr key={r.id}>
                  <td class="small nowrap">{new Date(r.at).toLocaleString()}</td>
                  <td>
                    <span class="pill">{r.event}</span>
                  </td>
                  <td class="small">{s.agentName(r.agent_id)}</td>
                  <td>{r.tool_name && <code>{r.tool_name}</code>}</td>
                  <td class="small">
                    {r.decision ?? '—'}
                    {r.reason && <div class="muted">“{r.reason}”</div>}
                  </td>
                  <td class="small">
                    {r.actor} <span class="muted">via {channelName(r.channel)}</span>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {shown.length === 0 && <p class="muted">No entries match.</p>}
        </div>
      )}
    </section>
  );
}
