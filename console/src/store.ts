import { useEffect, useState } from 'preact/hooks';
import { api, type Agent, type ConsentRequest, type Resolved } from './api';
import { live } from './live';
import { clippedText } from './reveal';

export interface Notice {
  id: number;
  kind: 'info' | 'ok' | 'warn' | 'error';
  text: string;
}

/** How a resolution reads to a person: "approved once by team-a via ws", "denied: timeout". */
export function describeResolution(
  r: Pick<Resolved, 'decision' | 'reason' | 'decided_by' | 'channel'>,
) {
  if (r.decided_by === 'system') return `denied: ${r.reason ?? 'by the system'}`;
  const what: Record<string, string> = {
    approve_once: 'approved once',
    approve_for_duration: 'approved for a duration',
    approve_for_scope: 'approved for its scope',
    deny: 'denied',
  };
  const reason = r.decision === 'deny' && r.reason ? ` (“${r.reason}”)` : '';
  return `${what[r.decision] ?? r.decision}${reason} by ${r.decided_by} via ${channelName(r.channel)}`;
}

export const channelName = (c: string) =>
  ({ ws: 'the console/WebSocket', rest: 'REST', webhook: 'a webhook', system: 'the system' })[c] ??
  c;

/**
 * The console's shared state: pending consent requests (live over the WebSocket), recent resolutions,
 * the tenant's agents (for names), and the notices shown in the corner.
 */
class Store {
  readonly pending = new Map<string, ConsentRequest>();
  readonly resolved = new Map<string, Resolved>();
  /**
   * The same resolutions with the request they answered, by request id: the chat finds a call's by its
   * tool_call_id (a request lists several calls; the chat shows each).
   */
  readonly resolvedCalls = new Map<string, { request: ConsentRequest; resolution: Resolved }>();
  agents: Agent[] | null = null;
  /** The request whose dialog is open (from the inbox or the chat timeline). */
  openId: string | null = null;
  notices: Notice[] = [];
  /** Why the server refused a decision sent for a request (its error frame's `ref`), for its dialog. */
  readonly refused = new Map<string, string>();
  private seq = 0;
  /** Bumped by `reset`: an answer for the session before it is dropped. */
  private generation = 0;
  private readonly listeners = new Set<() => void>();

  constructor() {
    live.on((f) => {
      if (f.type === 'consent.request') {
        const isNew = !this.pending.has(f.request.id);
        this.pending.set(f.request.id, f.request);
        if (isNew) this.notifyBrowser(f.request);
        // an agent created after the list was loaded: learn its name
        if (this.agents && !this.agents.some((a) => a.id === f.request.agent_id))
          void this.loadAgents().catch(() => undefined);
        this.emit();
      } else if (f.type === 'consent.resolved') {
        this.apply(f);
      } else if (f.type === 'subscribed') {
        // a (re)subscription redelivers every request still pending: those decided meanwhile go
        this.pending.clear();
        this.emit();
      } else if (f.type === 'error' && f.code === 'ALREADY_RESOLVED') {
        if (f.ref) {
          this.pending.delete(f.ref);
          if (this.openId === f.ref) this.openId = null;
        }
        this.notice('warn', `Too late: ${f.message}`);
      } else if (f.type === 'error' && f.ref && f.ref === this.openId) {
        // the open dialog shows it, and lets the person answer again
        this.refused.set(f.ref, `${f.code}: ${f.message}`);
        this.emit();
      } else if (f.type === 'error') {
        this.notice('error', `${f.code}: ${f.message}`);
      }
    });
  }

  private apply(f: Resolved): void {
    const req = this.pending.get(f.request_id);
    this.pending.delete(f.request_id);
    this.resolved.set(f.request_id, f);
    if (req) this.resolvedCalls.set(req.id, { request: req, resolution: f });
    if (this.openId === f.request_id) this.openId = null;
    if (req)
      this.notice(
        f.decided_by === 'system' ? 'warn' : 'info',
        `${req.tool_name} — ${describeResolution(f)}`,
      );
    this.emit();
  }

  /** A decision made over REST (no WebSocket): resolve it here as the frame would. */
  settle(
    id: string,
    r: { decision: string; decision_reason: string | null; decided_by: string; channel: string },
  ) {
    this.apply({
      type: 'consent.resolved',
      request_id: id,
      decision: r.decision,
      ...(r.decision_reason ? { reason: r.decision_reason } : {}),
      decided_by: r.decided_by,
      channel: r.channel,
    });
  }

  /** Forgets the session's state (signing out, another key): nothing of one tenant is shown to the next. */
  reset(): void {
    this.generation++;
    this.pending.clear();
    this.resolved.clear();
    this.resolvedCalls.clear();
    this.refused.clear();
    this.agents = null;
    this.loading = null;
    this.openId = null;
    this.notices = [];
    this.emit();
  }

  open(id: string | null): void {
    this.openId = id;
    this.emit();
  }

  subscribe(l: () => void): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  emit(): void {
    this.listeners.forEach((l) => l());
  }

  notice(kind: Notice['kind'], text: string): void {
    const n = { id: ++this.seq, kind, text };
    this.notices = [...this.notices.slice(-4), n];
    this.emit();
    window.setTimeout(() => this.dismiss(n.id), 12_000);
  }

  dismiss(id: number): void {
    this.notices = this.notices.filter((n) => n.id !== id);
    this.emit();
  }

  private loading: Promise<Agent[]> | null = null;

  /** The tenant's agents (one request at a time however many callers ask). */
  loadAgents(): Promise<Agent[]> {
    const generation = this.generation;
    const loading = (this.loading ??= api<Agent[]>('GET', '/v1/agents/?limit=1000')
      .then((agents) => {
        if (generation !== this.generation) return agents; // asked for before a reset
        this.agents = agents;
        this.emit();
        return agents;
      })
      .finally(() => {
        if (this.loading === loading) this.loading = null;
      }));
    return loading;
  }

  agentName(id: string): string {
    // the end of the id: UUIDv7 ids made close together share their first (time) digits
    return this.agents?.find((a) => a.id === id)?.name ?? `…${id.slice(-12)}`;
  }

  private notifyBrowser(r: ConsentRequest): void {
    if (typeof Notification === 'undefined' || Notification.permission !== 'granted') return;
    try {
      // the system shows these outside the page: the names revealed and cut here
      const tool = clippedText(r.tool_name);
      new Notification(`Consent requested: ${tool}`, {
        body: `${clippedText(this.agentName(r.agent_id))} asks to run ${tool} (scope ${clippedText(r.scope)})`,
        tag: r.id,
      });
    } catch {
      // some browsers allow notifications only from a service worker: the inbox shows it anyway
    }
  }
}

export const store = new Store();

/** Re-renders the component whenever the store changes. */
export function useStore(): Store {
  const [, setVersion] = useState(0);
  useEffect(() => store.subscribe(() => setVersion((n) => n + 1)), []);
  return store;
}

/** The current time, ticking every second (countdowns). */
export function useNow(): number {
  const [now, set] = useState(Date.now());
  useEffect(() => {
    const t = window.setInterval(() => set(Date.now()), 1000);
    return () => window.clearInterval(t);
  }, []);
  return now;
}

export function countdown(expiresAt: string, now: number): string {
  const s = Math.max(0, Math.round((Date.parse(expiresAt) - now) / 1000));
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
}

export function relative(iso: string | null, now = Date.now()): string {
  if (!iso) return 'never';
  const d = Math.round((Date.parse(iso) - now) / 1000);
  const a = Math.abs(d);
  if (a < 5) return 'just now';
  const t =
    a < 60
      ? `${a} s`
      : a < 3600
        ? `${Math.round(a / 60)} min`
        : a < 86400
          ? `${Math.round(a / 3600)} h`
          : `${Math.round(a / 86400)} d`;
  return d >= 0 ? `in ${t}` : `${t} ago`;
}
