import { useEffect, useMemo, useState } from 'preact/hooks';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { api, ApiError, asText, type Agent, type Problem, type Tool } from './api';
import { Clipped, Revealed } from './revealed';
import { ruleSentence } from './rule-sentences';
import { relative, store, useStore } from './store';
import { go } from './router';
import { DataTable, Empty, ErrorBanner, Loading } from './ui';

function useTools(): Tool[] | null {
  const [tools, setTools] = useState<Tool[] | null>(null);
  useEffect(() => {
    api<Tool[]>('GET', '/v1/tools/?limit=1000').then(setTools, () => setTools([]));
  }, []);
  return tools;
}

export function AgentList() {
  const s = useStore();
  const [q, setQ] = useState('');
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    s.loadAgents().catch((e: Error) => setError(e.message));
  }, []);
  const needle = q.trim().toLowerCase();
  const shown = (s.agents ?? []).filter(
    (a) =>
      !needle ||
      a.name.toLowerCase().includes(needle) ||
      (a.description ?? '').toLowerCase().includes(needle) ||
      a.tags.some((t) => t.toLowerCase().includes(needle)) ||
      a.tools.some((t) => t.name.toLowerCase().includes(needle)),
  );
  return (
    <section aria-labelledby="agents-title">
      <div class="page-head">
        <div>
          <h1 id="agents-title">Agents</h1>
          <p class="muted">Every agent of this tenant, with its tools and rules.</p>
        </div>
        <a class="btn primary" href="#/agents/new">
          New agent
        </a>
      </div>
      <label class="search">
        <span class="sr-only">Search agents</span>
        <input
          type="search"
          placeholder="Search by name, tag or tool"
          value={q}
          onInput={(e) => setQ(e.currentTarget.value)}
        />
      </label>
      <ErrorBanner error={error} />
      {s.agents === null ? (
        <Loading />
      ) : shown.length === 0 ? (
        <Empty title={s.agents.length === 0 ? 'No agents yet' : 'No agent matches'} />
      ) : (
        <ul class="cards" aria-label="Agents">
          {shown.map((a) => (
            <li class="card" key={a.id}>
              <div class="card-head">
                <h2 class="card-title">
                  <a href={`#/agents/${a.id}`}>
                    <Clipped text={a.name} />
                  </a>
                </h2>
                {a.last_stop_reason && (
                  <span class="pill">
                    <Clipped text={a.last_stop_reason} />
                  </span>
                )}
              </div>
              {a.description && (
                <p class="muted small">
                  <Clipped text={a.description} max={300} />
                </p>
              )}
              <p class="small">
                <span class="muted">model</span> <Clipped text={a.model ?? 'scripted'} /> ·{' '}
                <span class="muted">tools</span> {a.tools.length} · <span class="muted">rules</span>{' '}
                {a.tool_rules.length}
              </p>
              {a.tags.length > 0 && (
                <p class="tags">
                  {a.tags.map((t) => (
                    <span class="tag" key={t}>
                      <Clipped text={t} />
                    </span>
                  ))}
                </p>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

const SAFETY_CLASS: Record<string, string> = {
  read_only: 'ok',
  side_effecting: 'warn',
  privileged: 'danger',
};

const SafetyPill = ({ safety }: { safety?: string }) => (
  <span class={`pill ${SAFETY_CLASS[safety ?? ''] ?? ''}`}>{safety ?? '—'}</span>
);

export function AgentDetail({ id }: { id: string }) {
  const [a, setA] = useState<Agent | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api<Agent>('GET', `/v1/agents/${id}`).then(setA, (e: Error) => setError(e.message));
  }, [id]);
  if (error) return <ErrorBanner error={error} />;
  if (!a) return <Loading />;
  return (
    <section aria-labelledby="agent-title">
      <div class="page-head">
        <div>
          <p class="eyebrow">
            <a href="#/agents">Agents</a> /
          </p>
          <h1 id="agent-title">
            <Revealed text={a.name} />
          </h1>
          {a.description && (
            <p class="muted">
              <Revealed text={a.description} lines />
            </p>
          )}
        </div>
        <div class="row">
          <a class="btn" href={`#/agents/${a.id}/edit`}>
            Edit
          </a>
          <a class="btn primary" href={`#/chat/${a.id}`}>
            Chat
          </a>
        </div>
      </div>
      <div class="grid-2">
        <div class="panel">
          <h2>Model</h2>
          <dl class="facts">
            <dt>Model</dt>
            <dd>
              <Revealed text={a.model ?? 'scripted'} />
            </dd>
            <dt>Updated</dt>
            <dd>{relative(a.updated_at)}</dd>
            <dt>Last stop</dt>
            <dd>
              <Revealed text={a.last_stop_reason ?? '—'} />
            </dd>
            <dt>Id</dt>
            <dd>
              <code class="small">{a.id}</code>
            </dd>
          </dl>
          <h3>System prompt</h3>
          <pre class="prose">
            <Revealed text={a.system} lines />
          </pre>
        </div>
        <div class="panel">
          <h2>Tools</h2>
          <DataTable
            label="Tools"
            rows={a.tools}
            rowKey={(t) => t.id}
            empty="No tools"
            columns={[
              {
                head: 'Tool',
                cell: (t) => (
                  <>
                    <code>
                      <Clipped text={t.name} />
                    </code>
                    {t.description && (
                      <div class="muted small">
                        <Revealed text={t.description} lines />
                      </div>
                    )}
                  </>
                ),
              },
              {
                head: 'Safety',
                cell: (t) => <SafetyPill safety={t.safety} />,
              },
              {
                head: 'Kind',
                class: 'small',
                cell: (t) => (t.kind ? <Clipped text={t.kind} /> : '—'),
              },
            ]}
          />
          <h2>Tool rules</h2>
          {a.tool_rules.length === 0 ? (
            <p class="muted">No rules: every tool may run any time.</p>
          ) : (
            <ul class="rules" aria-label="Tool rules">
              {a.tool_rules.map((r, i) => (
                <li key={i}>
                  <Revealed text={ruleSentence(r)} />
                </li>
              ))}
            </ul>
          )}
        </div>
      </div>
      <div class="panel">
        <h2>Memory blocks</h2>
        {a.memory.blocks.length === 0 ? (
          <p class="muted">No memory blocks.</p>
        ) : (
          <div class="blocks">
            {a.memory.blocks.map((b) => (
              <MemoryBlock key={b.id} block={b} agentId={a.id} />
            ))}
          </div>
        )}
      </div>
    </section>
  );
}

/** A block with its fill, and the other agents it is shared with (blocks are rows of /v1/blocks). */
function MemoryBlock({
  block: b,
  agentId,
}: {
  block: Agent['memory']['blocks'][number];
  agentId: string;
}) {
  const [others, setOthers] = useState<Agent[]>([]);
  useEffect(() => {
    api<Agent[]>('GET', `/v1/blocks/${b.id}/agents`).then(
      (as) => setOthers(as.filter((x) => x.id !== agentId)),
      () => setOthers([]),
    );
  }, [b.id]);
  return (
    <div class="block">
      <div class="block-head">
        <p class="eyebrow">
          <Clipped text={b.label} />
        </p>
        {b.limit !== undefined && (
          <span class="muted small">
            {b.value.length} / {b.limit} chars
          </span>
        )}
      </div>
      <pre class="prose">
        <Revealed text={b.value} lines />
      </pre>
      {others.length > 0 && (
        <p class="small shared">
          Shared with{' '}
          {others.map((o, i) => (
            <span key={o.id}>
              {i > 0 && ', '}
              <a href={`#/agents/${o.id}`}>
                <Clipped text={o.name} />
              </a>
            </span>
          ))}
          : an edit here changes theirs too.
        </p>
      )}
    </div>
  );
}

// ---------------------------------------------------------------- create / edit

interface FormState {
  name: string;
  description: string;
  system: string;
  model: string;
  tools: string[];
  tags: string;
  rules: string;
  blocks: { label: string; value: string }[];
}

const EMPTY: FormState = {
  name: '',
  description: '',
  system: 'You are a helpful assistant.',
  model: '',
  tools: [],
  tags: '',
  rules: '[]',
  blocks: [{ label: 'human', value: '' }],
};

function formOf(a: Agent): FormState {
  return {
    name: a.name,
    description: a.description ?? '',
    system: a.system,
    model: a.model ?? '',
    tools: a.tools.map((t) => t.name),
    tags: a.tags.join(', '),
    rules: toYaml(a.tool_rules).trim(),
    blocks: a.memory.blocks.map((b) => ({ label: b.label, value: b.value })),
  };
}

/** The API body a form stands for; a YAML problem in the rules field is reported at `tool_rules`. */
function bodyOf(f: FormState): { body: Record<string, unknown>; problems: Problem[] } {
  let rules: unknown = [];
  const problems: Problem[] = [];
  try {
    rules = parseYaml(f.rules || '[]') ?? [];
  } catch (e) {
    problems.push({
      path: 'tool_rules',
      message: `is not valid YAML: ${(e as Error).message.split('\n')[0]}`,
    });
  }
  const body: Record<string, unknown> = {
    name: f.name,
    system: f.system,
    tools: f.tools,
    tool_rules: rules,
    tags: f.tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
    memory_blocks: f.blocks.filter((b) => b.label.trim()),
  };
  if (f.description) body.description = f.description;
  if (f.model) body.model = f.model;
  return { body, problems };
}

/** Problems for one field: its own path and everything under it. */
const at = (problems: Problem[], field: string) =>
  problems.filter(
    (p) => p.path === field || p.path.startsWith(`${field}[`) || p.path.startsWith(`${field}.`),
  );

function FieldErrors({ problems, id }: { problems: Problem[]; id: string }) {
  if (problems.length === 0) return null;
  return (
    <ul class="field-errors" id={id}>
      {problems.map((p, i) => (
        <li key={i}>
          <code>
            <Revealed text={p.path} />
          </code>{' '}
          <Revealed text={p.message} />
        </li>
      ))}
    </ul>
  );
}

export function AgentEditor({ id }: { id: string | null }) {
  const tools = useTools();
  const [mode, setMode] = useState<'form' | 'yaml'>('form');
  const [form, setForm] = useState<FormState>(EMPTY);
  const [yaml, setYaml] = useState('');
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    if (!id) {
      setYaml(toYaml(bodyOf(EMPTY).body));
      return;
    }
    api<Agent>('GET', `/v1/agents/${id}`).then(
      (a) => {
        setForm(formOf(a));
        setYaml(
          toYaml({
            ...bodyOf(formOf(a)).body,
            ...(a.tool_executor && Object.keys(a.tool_executor).length
              ? { tool_executor: a.tool_executor }
              : {}),
            ...(a.model_script ? { model_script: a.model_script } : {}),
          }),
        );
      },
      (e: Error) => setError(e.message),
    );
  }, [id]);

  const switchTo = (m: 'form' | 'yaml') => {
    if (m === mode) return;
    if (m === 'yaml') setYaml(toYaml(bodyOf(form).body));
    else {
      try {
        const b = (parseYaml(yaml) ?? {}) as Record<string, unknown>;
        setForm({
          name: asText(b.name),
          description: asText(b.description),
          system: asText(b.system),
          model: asText(b.model),
          tools: Array.isArray(b.tools) ? b.tools.map(String) : [],
          tags: Array.isArray(b.tags) ? b.tags.join(', ') : '',
          rules: toYaml(b.tool_rules ?? []).trim(),
          blocks: Array.isArray(b.memory_blocks) ? (b.memory_blocks as FormState['blocks']) : [],
        });
      } catch {
        // an unparsable YAML stays in the YAML tab, where its error is shown on save
      }
    }
    setMode(m);
  };

  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    let body: Record<string, unknown>;
    if (mode === 'yaml') {
      try {
        const doc: unknown = parseYaml(yaml);
        if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
          throw new Error('the YAML must be a mapping of agent fields');
        body = doc as Record<string, unknown>;
      } catch (err) {
        setProblems([{ path: '$', message: `YAML: ${(err as Error).message.split('\n')[0]}` }]);
        return;
      }
    } else {
      const r = bodyOf(form);
      if (r.problems.length) return setProblems(r.problems);
      body = r.body;
    }
    setBusy(true);
    try {
      const saved = await api<Agent>(
        id ? 'PATCH' : 'POST',
        id ? `/v1/agents/${id}` : '/v1/agents/',
        body,
      );
      setProblems([]);
      store.notice('ok', `${id ? 'Saved' : 'Created'} agent ${saved.name}`);
      void store.loadAgents();
      go(`#/agents/${saved.id}`);
    } catch (err) {
      if (err instanceof ApiError && err.problems.length) setProblems(err.problems);
      else setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const set = <K extends keyof FormState>(k: K, v: FormState[K]) =>
    setForm((f) => ({ ...f, [k]: v }));
  const described = (field: string) =>
    at(problems, field).length ? { 'aria-describedby': `err-${field}`, 'aria-invalid': true } : {};
  const toolNames = useMemo(() => (tools ?? []).map((t) => t.name), [tools]);
  const safetyOf = (n: string) => tools?.find((t) => t.name === n)?.safety;

  return (
    <section aria-labelledby="editor-title">
      <div class="page-head">
        <div>
          <p class="eyebrow">
            <a href="#/agents">Agents</a> /
          </p>
          <h1 id="editor-title">
            {id ? (
              <>
                {'Edit '}
                <Clipped text={form.name || 'agent'} />
              </>
            ) : (
              'New agent'
            )}
          </h1>
        </div>
      </div>
      <div class="tabs" role="tablist" aria-label="Editor">
        {(['form', 'yaml'] as const).map((m) => (
          <button
            key={m}
            role="tab"
            id={`tab-${m}`}
            aria-selected={mode === m}
            aria-controls="editor-panel"
            class={`tab ${mode === m ? 'is-active' : ''}`}
            onClick={() => switchTo(m)}
          >
            {m === 'form' ? 'Form' : 'YAML'}
          </button>
        ))}
      </div>
      <form
        id="editor-panel"
        role="tabpanel"
        aria-labelledby={`tab-${mode}`}
        class="panel editor"
        onSubmit={(e) => void save(e)}
        noValidate
      >
        {problems.length > 0 && (
          <div class="banner is-error" role="alert">
            <p>
              <strong>The agent is not valid.</strong> Problems by JSON path:
            </p>
            <ul class="problems" aria-label="Validation errors">
              {problems.map((p, i) => (
                <li key={i}>
                  <code>
                    <Revealed text={p.path} />
                  </code>{' '}
                  <Revealed text={p.message} />
                </li>
              ))}
            </ul>
          </div>
        )}
        <ErrorBanner error={error} />
        {mode === 'yaml' ? (
          <label>
            <span class="label">Agent as YAML</span>
            <textarea
              class="code"
              rows={22}
              spellcheck={false}
              value={yaml}
              onInput={(e) => setYaml(e.currentTarget.value)}
            />
          </label>
        ) : (
          <>
            <div class="grid-2">
              <label>
                <span class="label">Name</span>
                <input
                  value={form.name}
                  onInput={(e) => set('name', e.currentTarget.value)}
                  {...described('name')}
                />
                <FieldErrors problems={at(problems, 'name')} id="err-name" />
              </label>
              <label>
                <span class="label">Model</span>
                <input
                  placeholder="scripted/default or openai/gpt-4o-mini"
                  value={form.model}
                  onInput={(e) => set('model', e.currentTarget.value)}
                  {...described('model')}
                />
                <FieldErrors problems={at(problems, 'model')} id="err-model" />
              </label>
            </div>
            <label>
              <span class="label">Description</span>
              <input
                value={form.description}
                onInput={(e) => set('description', e.currentTarget.value)}
              />
            </label>
            <label>
              <span class="label">System prompt</span>
              <textarea
                rows={4}
                value={form.system}
                onInput={(e) => set('system', e.currentTarget.value)}
                {...described('system')}
              />
              <FieldErrors problems={at(problems, 'system')} id="err-system" />
            </label>
            <fieldset>
              <legend>Tools</legend>
              {tools === null ? (
                <p class="muted small">Loading tools…</p>
              ) : (
                <div class="checks">
                  {[...new Set([...toolNames, ...form.tools])].map((n) => (
                    <label class="check" key={n}>
                      <input
                        type="checkbox"
                        checked={form.tools.includes(n)}
                        onChange={(e) =>
                          set(
                            'tools',
                            e.currentTarget.checked
                              ? [...form.tools, n]
                              : form.tools.filter((x) => x !== n),
                          )
                        }
                      />
                      <code>
                        <Clipped text={n} />
                      </code>
                      {safetyOf(n) !== 'read_only' && <SafetyPill safety={safetyOf(n)} />}
                    </label>
                  ))}
                </div>
              )}
              <FieldErrors problems={at(problems, 'tools')} id="err-tools" />
            </fieldset>
            <label>
              <span class="label">Tool rules (YAML list)</span>
              <textarea
                class="code"
                rows={6}
                spellcheck={false}
                value={form.rules}
                onInput={(e) => set('rules', e.currentTarget.value)}
                {...described('tool_rules')}
              />
              <FieldErrors problems={at(problems, 'tool_rules')} id="err-tool_rules" />
            </label>
            <label>
              <span class="label">Tags (comma separated)</span>
              <input value={form.tags} onInput={(e) => set('tags', e.currentTarget.value)} />
            </label>
            <fieldset>
              <legend>Memory blocks</legend>
              {form.blocks.map((b, i) => (
                <div class="block-row" key={i}>
                  <input
                    aria-label={`Block ${i + 1} label`}
                    value={b.label}
                    onInput={(e) =>
                      set(
                        'blocks',
                        form.blocks.map((x, j) =>
                          j === i ? { ...x, label: e.currentTarget.value } : x,
                        ),
                      )
                    }
                  />
                  <textarea
                    aria-label={`Block ${i + 1} value`}
                    rows={2}
                    value={b.value}
                    onInput={(e) =>
                      set(
                        'blocks',
                        form.blocks.map((x, j) =>
                          j === i ? { ...x, value: e.currentTarget.value } : x,
                        ),
                      )
                    }
                  />
                  <button
                    type="button"
                    class="btn ghost"
                    aria-label={`Remove block ${b.label || i + 1}`}
                    onClick={() =>
                      set(
                        'blocks',
                        form.blocks.filter((_, j) => j !== i),
                      )
                    }
                  >
                    Remove
                  </button>
                </div>
              ))}
              <button
                type="button"
                class="btn ghost"
                onClick={() => set('blocks', [...form.blocks, { label: '', value: '' }])}
              >
                Add block
              </button>
              <FieldErrors problems={at(problems, 'memory_blocks')} id="err-memory_blocks" />
            </fieldset>
          </>
        )}
        <div class="row end">
          <a class="btn ghost" href={id ? `#/agents/${id}` : '#/agents'}>
            Cancel
          </a>
          <button class="btn primary" type="submit" disabled={busy}>
            {id ? 'Save agent' : 'Create agent'}
          </button>
        </div>
      </form>
    </section>
  );
}
