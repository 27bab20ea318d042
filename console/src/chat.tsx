import { useEffect, useRef, useState } from 'preact/hooks';
import { api, asText, type Agent, type ConsentRequest, type LettaMessage, type Run } from './api';
import { live, type RunEventFrame } from './live';
import { clippedText } from './reveal';
import { Clipped, Preview, Revealed } from './revealed';
import { describeResolution, relative, useStore } from './store';
import { go } from './router';
import { AgentSelect, DataTable, ErrorBanner } from './ui';

interface Entry {
  key: string;
  runId: string;
  kind: string;
  at: number;
  data: Record<string, unknown>;
}

/** Text of a Letta message's content (a string or a list of text parts). */
function textOf(c: unknown): string {
  if (typeof c === 'string') return c;
  if (!Array.isArray(c)) return '';
  return (c as unknown[])
    .map((p) => (typeof p === 'object' && p !== null ? asText((p as { text?: unknown }).text) : ''))
    .join('');
}

function args(raw: unknown): string {
  if (typeof raw !== 'string') return JSON.stringify(raw ?? {}, null, 2);
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw;
  }
}

/** A user message the server wrote itself (Letta's heartbeat and system alert JSON), else null. */
function automated(m: LettaMessage): { type: string; text: string } | null {
  if (m.message_type !== 'user_message') return null;
  try {
    const j = JSON.parse(textOf(m.content)) as {
      type?: unknown;
      reason?: unknown;
      message?: unknown;
    };
    if (j.type === 'heartbeat' || j.type === 'system_alert')
      return { type: j.type, text: asText(j.reason ?? j.message) };
  } catch {
    // a person's message
  }
  return null;
}

/**
 * Only the heartbeat after a `request_heartbeat` call starts a new pass (its reason is Letta's
 * REQ_HEARTBEAT_MESSAGE); the others (a continue or child rule, a failed or refused call, a required tool)
 * go on in the same pass.
 */
const passHeartbeat = (auto: { type: string; text: string } | null): boolean =>
  auto?.type === 'heartbeat' && auto.text.includes('request_heartbeat=true');

const startsPass = (e: Entry) =>
  (e.kind === 'message' || e.kind === 'input_message') &&
  passHeartbeat(automated(e.data as LettaMessage));

/** A run's entries with the pass each one belongs to (a heartbeat request starts the next pass). */
function withPasses(items: Entry[]): { e: Entry; pass: number }[] {
  let pass = 1;
  return items.map((e) => ({ e, pass: startsPass(e) ? ++pass : pass }));
}

const tokens = (u: Record<string, number | undefined>) =>
  `${u.total_tokens ?? 0} tokens (${u.prompt_tokens ?? 0} in, ${u.completion_tokens ?? 0} out)`;

/** How much of a message, a result or a call's arguments the timeline shows before "+N chars". */
const TEXT_MAX = 2000;

/** What a person, the model or a tool wrote: revealed, its lines kept, long ones cut to a preview. */
const Said = ({ text, label }: { text: string; label: string }) => (
  <Preview text={text} max={TEXT_MAX} label={label} lines />
);

/** A tool's name as the model gave it: revealed, cut to a name's length. */
const ToolName = ({ name }: { name: string | undefined }) => (
  <code>
    <Clipped text={name ?? ''} />
  </code>
);

/** One timeline line per run event; messages by their Letta type. */
function TimelineItem({ e, pass, agentId }: { e: Entry; pass: number; agentId: string }) {
  const d = e.data;
  switch (e.kind) {
    case 'run.started':
      return (
        <li class="tl tl-run">
          Run started <span class="muted small">· pass 1</span>
        </li>
      );
    case 'step.started':
      return <li class="tl tl-step">Model call {asText(d.step)}…</li>;
    case 'step.completed': {
      const u = (d.usage ?? {}) as Record<string, number>;
      return (
        <li class="tl tl-step">
          Model call {asText(d.step)} answered{' '}
          <span class="muted small">
            · <Clipped text={asText(d.model)} /> · {tokens(u)} ·{' '}
            <Clipped text={asText(d.finish_reason)} />
          </span>
        </li>
      );
    }
    case 'tools.completed':
      return null; // each result follows as its tool_return_message
    case 'tools.executing':
      return (
        <li class="tl tl-step">
          Executing{' '}
          {Array.isArray(d.tools)
            ? d.tools.map((t) => (
                <code key={String(t)}>
                  <Clipped text={String(t)} />
                </code>
              ))
            : null}
        </li>
      );
    case 'run.completed': {
      const u = (d.usage ?? null) as Record<string, number> | null;
      return (
        <li class={`tl tl-end ${d.status === 'failed' ? 'is-error' : ''}`}>
          <strong>Stop:</strong> <Clipped text={String(d.stop_reason ?? d.status)} />
          {u && (
            <span class="muted small">
              {' '}
              · {tokens(u)}
              {u.step_count ? ` · ${u.step_count} model call(s)` : ''}
            </span>
          )}
          {d.error ? (
            <div class="small">
              <Said text={JSON.stringify(d.error)} label="the error" />
            </div>
          ) : null}
        </li>
      );
    }
    case 'input_message':
    case 'message':
      break;
    default:
      return (
        <li class="tl muted small">
          <Clipped text={e.kind} /> <Said text={JSON.stringify(d)} label="the event" />
        </li>
      );
  }
  const m = d as LettaMessage;
  const call = m.tool_call as
    { name?: string; arguments?: unknown; tool_call_id?: string } | undefined;
  const auto = automated(m);
  if (auto && passHeartbeat(auto))
    return (
      <li class="tl tl-pass">
        <span class="who">Heartbeat</span> pass {pass} begins
        <div class="muted small">
          <Said text={auto.text} label="the heartbeat" />
        </div>
      </li>
    );
  if (auto?.type === 'heartbeat')
    return (
      <li class="tl tl-reason">
        <span class="who">Heartbeat</span> <Said text={auto.text} label="the heartbeat" />
      </li>
    );
  if (auto)
    return (
      <li class="tl tl-reason">
        <span class="who">System alert</span> <Said text={auto.text} label="the alert" />
      </li>
    );
  switch (m.message_type) {
    case 'user_message':
      return (
        <li class="tl tl-user">
          <span class="who">You</span> <Said text={textOf(m.content)} label="the message" />
        </li>
      );
    case 'system_message':
      return (
        <li class="tl muted small">
          System: <Said text={textOf(m.content)} label="the system message" />
        </li>
      );
    case 'reasoning_message':
      return (
        <li class="tl tl-reason">
          <span class="who">Reasoning</span>{' '}
          <Said text={asText(m.reasoning)} label="the reasoning" />
        </li>
      );
    case 'assistant_message':
      return (
        <li class="tl tl-assistant">
          <span class="who">Agent</span> <Said text={textOf(m.content)} label="the answer" />
        </li>
      );
    case 'tool_call_message':
      return (
        <li class="tl tl-call">
          <span class="who">Tool call</span> <ToolName name={call?.name} />
          <pre class="json small">
            <Said text={args(call?.arguments)} label="the arguments" />
          </pre>
        </li>
      );
    case 'approval_request_message': {
      // one request lists every call its turn parked (Letta's shape): each gets its own line
      const calls = (Array.isArray(m.tool_calls) ? m.tool_calls : [call]) as (typeof call)[];
      return (
        <>
          {calls.map((c, i) => (
            <ConsentLine
              key={c?.tool_call_id ?? i}
              call={c}
              requestId={i === 0 ? asText(m.request_id) : ''}
              agentId={agentId}
              at={Date.parse(asText(m.date)) || Infinity}
            />
          ))}
        </>
      );
    }
    case 'tool_return_message': {
      const text = asText(m.tool_return);
      const refused = /^\[(ToolRuleViolation|PermissionDenied)/.test(text);
      return (
        <li
          class={`tl tl-return ${m.status === 'error' ? (refused ? 'is-refused' : 'is-error') : 'is-ok'}`}
        >
          <span class="who">
            {refused ? 'Refused' : m.status === 'error' ? 'Tool error' : 'Result'}
          </span>{' '}
          <ToolName name={asText(m.name)} />
          <pre class="json small">
            <Said text={args(text)} label="the result" />
          </pre>
        </li>
      );
    }
    case 'heartbeat_message':
      return <li class="tl tl-step">Heartbeat</li>;
    default:
      return (
        <li class="tl muted small">
          <Clipped text={m.message_type} />:{' '}
          <Said text={textOf(m.content) || JSON.stringify(m)} label="the message" />
        </li>
      );
  }
}

interface Step {
  id: string;
  step_number: number;
  model: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  stop_reason: string | null;
}

/** A finished run, opened on demand: its model calls (steps) and its messages as a timeline. */
/** A parked call in the timeline: its consent request's button while pending, its answer after. */
function ConsentLine({
  call,
  requestId,
  agentId,
  at,
}: {
  call: { name?: string; arguments?: unknown; tool_call_id?: string } | undefined;
  requestId: string;
  agentId: string;
  /** When the line's approval request was written. */
  at: number;
}) {
  const s = useStore();
  // A tool_call_id may name several calls of an agent (a provider that reuses ids): the line's request
  // is the agent's newest for the id made by the time of the line, never a later call's.
  const newest = <T,>(xs: Iterable<T>, req: (x: T) => ConsentRequest): T | undefined => {
    let best: T | undefined;
    for (const x of xs) {
      const r = req(x);
      if (r.tool_call_id !== call?.tool_call_id || r.agent_id !== agentId) continue;
      if (Date.parse(r.created_at) > at) continue;
      if (!best || Date.parse(r.created_at) >= Date.parse(req(best).created_at)) best = x;
    }
    return best;
  };
  const pending = s.pending.get(requestId) ?? newest(s.pending.values(), (r) => r);
  const resolved =
    s.resolved.get(pending?.id ?? requestId) ??
    newest(s.resolvedCalls.values(), (v) => v.request)?.resolution;
  return (
    <li class="tl tl-park">
      <span class="who">{pending ? 'Waiting for consent' : 'Consent'}</span>{' '}
      <ToolName name={call?.name} />
      <pre class="json small">
        <Said text={args(call?.arguments)} label="the arguments" />
      </pre>
      {pending ? (
        <button
          class="btn primary small"
          aria-label={`Answer consent request for ${call?.name === undefined ? 'the call' : clippedText(call.name)} (${clippedText(call?.tool_call_id ?? pending.id)})`}
          onClick={() => s.open(pending.id)}
        >
          Answer consent request
        </button>
      ) : (
        <span class="muted small">
          {resolved ? <Revealed text={describeResolution(resolved)} /> : 'answered'}
        </span>
      )}
    </li>
  );
}

function PastRun({ run }: { run: Run }) {
  const [open, setOpen] = useState(false);
  const [msgs, setMsgs] = useState<LettaMessage[] | null>(null);
  const [steps, setSteps] = useState<Step[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const toggle = async () => {
    setOpen(!open);
    if (msgs) return;
    try {
      const [m, st] = await Promise.all([
        api<LettaMessage[]>('GET', `/v1/runs/${run.id}/messages?limit=1000`),
        api<Step[]>('GET', `/v1/runs/${run.id}/steps?limit=1000&order=asc`),
      ]);
      setMsgs(m);
      setSteps(st);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const entries = (msgs ?? []).map((m) => ({
    key: m.id,
    runId: run.id,
    kind: 'message',
    at: 0,
    data: m,
  }));
  return (
    <li class="past">
      <button class="past-head" aria-expanded={open} onClick={() => void toggle()}>
        <span class={`dot ${run.status}`} aria-hidden="true" />
        <span>{relative(run.created_at)}</span>
        <span class="pill">
          <Clipped text={run.stop_reason ?? run.status} />
        </span>
        <span class="muted small">{run.usage?.total_tokens ?? 0} tokens</span>
      </button>
      {open && (
        <div class="past-body">
          <ErrorBanner error={error} />
          <DataTable
            label={`Model calls of run ${run.id}`}
            rows={steps}
            rowKey={(st) => st.id}
            empty="No model calls"
            columns={[
              { head: 'Call', class: 'small', cell: (st) => st.step_number },
              {
                head: 'Model',
                class: 'small',
                cell: (st) => (st.model ? <Clipped text={st.model} /> : '—'),
              },
              {
                head: 'Tokens',
                class: 'small',
                cell: (st) =>
                  `${st.total_tokens} (${st.prompt_tokens} in, ${st.completion_tokens} out)`,
              },
              {
                head: 'Stop',
                class: 'small',
                cell: (st) => (st.stop_reason ? <Clipped text={st.stop_reason} /> : '—'),
              },
            ]}
          />
          <ol class="timeline" aria-label={`Messages of run ${run.id}`}>
            {withPasses(entries).map(({ e, pass }) => (
              <TimelineItem key={e.key} e={e} pass={pass} agentId={run.agent_id} />
            ))}
          </ol>
        </div>
      )}
    </li>
  );
}

const RUNS_PAGE = 20;

export function Chat({ agentId }: { agentId: string | null }) {
  const s = useStore();
  const [agent, setAgent] = useState<Agent | null>(null);
  const [entries, setEntries] = useState<Entry[]>([]);
  const [runs, setRuns] = useState<Run[]>([]);
  const [moreRuns, setMoreRuns] = useState(false);
  const [text, setText] = useState('');
  const [error, setError] = useState<string | null>(null);
  const setFailure = (e: Error) => setError(e.message);
  const [sending, setSending] = useState(false);
  const end = useRef<HTMLLIElement>(null);

  useEffect(() => {
    if (!s.agents) void s.loadAgents();
  }, []);
  useEffect(() => {
    setEntries([]);
    setAgent(null);
    if (!agentId) return;
    api<Agent>('GET', `/v1/agents/${agentId}`).then(setAgent, (e: Error) => setError(e.message));
    const loadRuns = () =>
      api<Run[]>('GET', `/v1/runs/?agent_id=${agentId}&limit=${RUNS_PAGE}`).then((r) => {
        setRuns(r);
        setMoreRuns(r.length === RUNS_PAGE);
      }, setFailure);
    void loadRuns();
    return live.on((f) => {
      if (f.type !== 'run.event' || f.agent_id !== agentId) return;
      const ev: RunEventFrame = f;
      if (ev.event === 'message.delta') return; // the whole message follows
      setEntries((es) => [
        ...es.slice(-500),
        {
          key: `${ev.run_id}:${es.length}:${ev.event}`,
          runId: ev.run_id,
          kind: ev.event,
          at: Date.now(),
          data: ev.data,
        },
      ]);
      if (ev.event === 'run.completed') void loadRuns();
    });
  }, [agentId]);
  useEffect(() => end.current?.scrollIntoView({ block: 'nearest' }), [entries.length]);

  const olderRuns = async () => {
    try {
      const last = runs[runs.length - 1].id; // newest first: `after` is the next, older page
      const r = await api<Run[]>(
        'GET',
        `/v1/runs/?agent_id=${agentId}&limit=${RUNS_PAGE}&after=${last}`,
      );
      setRuns((x) => [...x, ...r]);
      setMoreRuns(r.length === RUNS_PAGE);
    } catch (e) {
      setFailure(e as Error);
    }
  };

  const send = async (e: Event) => {
    e.preventDefault();
    if (!agentId || !text.trim()) return;
    setSending(true);
    setError(null);
    try {
      await api('POST', `/v1/agents/${agentId}/messages/async`, {
        messages: [{ role: 'user', content: text }],
      });
      setText('');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setSending(false);
    }
  };

  const byRun: { runId: string; items: Entry[] }[] = [];
  // a model call shows once: its start gives way to its answer
  const answered = new Set(
    entries.filter((en) => en.kind === 'step.completed').map((en) => asText(en.data.step_id)),
  );
  for (const en of entries) {
    if (en.kind === 'step.started' && answered.has(asText(en.data.step_id))) continue;
    const last = byRun[byRun.length - 1];
    if (last?.runId === en.runId) last.items.push(en);
    else byRun.push({ runId: en.runId, items: [en] });
  }

  return (
    <section aria-labelledby="chat-title" class="chat">
      <div class="page-head">
        <div>
          <h1 id="chat-title">
            Chat
            {agent && (
              <>
                {' with '}
                <Clipped text={agent.name} />
              </>
            )}
          </h1>
          <p class="muted">
            Send a message and watch the batch run: model calls, tool calls, rules and consent.
          </p>
        </div>
        <AgentSelect inline value={agentId ?? ''} onChange={(id) => go(`#/chat/${id}`)} />
      </div>
      <ErrorBanner error={error} />
      {agentId && (
        <div class="chat-grid">
          <div class="panel">
            <h2>Live timeline</h2>
            {byRun.length === 0 ? (
              <p class="muted">Runs of this agent appear here as they happen.</p>
            ) : (
              <div role="log" aria-label="Run timeline" aria-live="polite">
                {byRun.map((g, i) => (
                  <div class="run-group" key={`${g.runId}-${i}`}>
                    <p class="eyebrow">run {g.runId.slice(4, 12)}</p>
                    <ol class="timeline">
                      {withPasses(g.items).map(({ e: en, pass }) => (
                        <TimelineItem key={en.key} e={en} pass={pass} agentId={agentId ?? ''} />
                      ))}
                    </ol>
                  </div>
                ))}
              </div>
            )}
            <form class="composer" onSubmit={(e) => void send(e)}>
              <label class="grow">
                <span class="sr-only">Message</span>
                <textarea
                  rows={2}
                  placeholder="Write a message…"
                  value={text}
                  onInput={(e) => setText(e.currentTarget.value)}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter' && !e.shiftKey) void send(e);
                  }}
                />
              </label>
              <button class="btn primary" type="submit" disabled={sending || !text.trim()}>
                Send
              </button>
            </form>
          </div>
          <div class="panel">
            <h2>Past runs</h2>
            {runs.length === 0 ? (
              <p class="muted">No runs yet.</p>
            ) : (
              <ul class="pasts" aria-label="Past runs">
                {runs.map((r) => (
                  <PastRun key={r.id} run={r} />
                ))}
              </ul>
            )}
            {moreRuns && (
              <button class="btn ghost small" onClick={() => void olderRuns()}>
                Older runs
              </button>
            )}
          </div>
        </div>
      )}
    </section>
  );
}
