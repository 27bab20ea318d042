import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, session } from './api';
import { AgentDetail, AgentEditor, AgentList } from './agents';
import { Chat } from './chat';
import { ConsentDialog } from './consent-dialog';
import { Audit, Grants } from './grants';
import { Inbox } from './inbox';
import { live, type LiveState } from './live';
import { Clipped } from './revealed';
import { useRoute } from './router';
import { useStore } from './store';
import { ErrorBanner } from './ui';

type Auth = 'checking' | 'open' | 'key' | 'signed-out';

/** Open mode needs no key; otherwise a key kept in this tab's session storage. */
function SignIn({ onDone, failed }: { onDone: () => void; failed: boolean }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(failed ? 'That key was refused.' : null);
  const submit = async (e: Event) => {
    e.preventDefault();
    session.signIn(key.trim());
    try {
      await api('GET', '/v1/agents/?limit=1');
      onDone();
    } catch (err) {
      session.signOut();
      setError(
        err instanceof ApiError && err.status === 401
          ? 'That key was refused.'
          : (err as Error).message,
      );
    }
  };
  return (
    <main class="signin">
      <form
        class="panel signin-card"
        onSubmit={(e) => void submit(e)}
        aria-labelledby="signin-title"
      >
        <div class="brand big">
          <span class="logo" aria-hidden="true" />
          Rulebound
        </div>
        <h1 id="signin-title">Sign in to the console</h1>
        <p class="muted">
          Use an API key of your tenant. It stays in this tab only (session storage).
        </p>
        <label>
          <span class="label">API key</span>
          <input
            type="password"
            autoComplete="off"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
            required
          />
        </label>
        <ErrorBanner error={error} />
        <button class="btn primary wide" type="submit" disabled={!key.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}

const NAV = [
  { href: '#/inbox', label: 'Inbox', route: 'inbox' },
  { href: '#/agents', label: 'Agents', route: 'agents' },
  { href: '#/chat', label: 'Chat', route: 'chat' },
  { href: '#/grants', label: 'Grants', route: 'grants' },
  { href: '#/audit', label: 'Audit', route: 'audit' },
];

function Page({ route }: { route: string[] }) {
  const [head, a, b] = route;
  switch (head) {
    case 'agents':
      if (a === 'new') return <AgentEditor id={null} />;
      if (a && b === 'edit') return <AgentEditor id={a} />;
      if (a) return <AgentDetail id={a} />;
      return <AgentList />;
    case 'chat':
      return <Chat agentId={a ?? null} />;
    case 'grants':
      return <Grants />;
    case 'audit':
      return <Audit />;
    default:
      return <Inbox />;
  }
}

export function App() {
  const s = useStore();
  const route = useRoute();
  const [auth, setAuth] = useState<Auth>('checking');
  const [failed, setFailed] = useState(false);
  const [state, setState] = useState<LiveState>('connecting');

  const check = async () => {
    try {
      await api('GET', '/v1/agents/?limit=1');
      setAuth(session.key() ? 'key' : 'open');
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) {
        setFailed(session.key() !== null);
        session.signOut();
        setAuth('signed-out');
      } else setAuth(session.key() ? 'key' : 'open');
    }
  };
  useEffect(() => {
    void check();
    return session.onRefused(() => {
      session.signOut();
      setFailed(true);
      setAuth('signed-out');
    });
  }, []);
  useEffect(() => {
    if (auth !== 'open' && auth !== 'key') return;
    s.reset();
    void s.loadAgents().catch(() => undefined);
    const off = live.onState(setState);
    live.start();
    return () => {
      off();
      live.stop();
      s.reset();
    };
  }, [auth]);

  if (auth === 'checking') return <p class="muted center">Loading…</p>;
  if (auth === 'signed-out') return <SignIn failed={failed} onDone={() => setAuth('key')} />;

  const open = s.openId ? s.pending.get(s.openId) : undefined;
  const current = route[0] ?? 'inbox';
  return (
    <div class="shell">
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <div class="brand">
          <span class="logo" aria-hidden="true" />
          Rulebound
        </div>
        <nav aria-label="Main">
          <ul>
            {NAV.map((n) => (
              <li key={n.route}>
                <a href={n.href} aria-current={current === n.route ? 'page' : undefined}>
                  {n.label}
                  {n.route === 'inbox' && s.pending.size > 0 && (
                    <span class="badge" aria-label={`${s.pending.size} pending`}>
                      {s.pending.size}
                    </span>
                  )}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="session">
          <span class={`live ${state}`} title={`WebSocket: ${state}`}>
            <span class="dot" aria-hidden="true" />
            {state === 'live' ? 'Live' : state === 'connecting' ? 'Connecting' : 'Offline'}
          </span>
          {auth === 'key' ? (
            <button
              class="btn ghost small"
              onClick={() => {
                session.signOut();
                live.stop();
                setFailed(false);
                setAuth('signed-out');
              }}
            >
              Sign out
            </button>
          ) : (
            <span class="pill" title="The server has no API keys: one tenant, no sign-in">
              open mode
            </span>
          )}
        </div>
      </header>
      <main id="main" class="content" tabIndex={-1}>
        <Page route={route} />
      </main>
      <div class="notices" role="status" aria-live="polite" aria-label="Notifications">
        {s.notices.map((n) => (
          <div class={`notice ${n.kind}`} key={n.id}>
            <span>
              <Clipped text={n.text} max={300} />
            </span>
            <button class="close" aria-label="Dismiss" onClick={() => s.dismiss(n.id)}>
              ×
            </button>
          </div>
        ))}
      </div>
      {open && <ConsentDialog key={open.id} request={open} onClose={() => s.open(null)} />}
    </div>
  );
}
