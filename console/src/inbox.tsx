import { useState } from 'preact/hooks';
import { Arguments } from './arguments';
import { clippedText } from './reveal';
import { Clipped, Preview } from './revealed';
import { countdown, store, useNow, useStore } from './store';
import { Empty } from './ui';

/** Every pending consent request of the tenant, live; each opens the decision dialog. */
export function Inbox() {
  const s = useStore();
  const now = useNow();
  const [perm, setPerm] = useState(
    typeof Notification === 'undefined' ? 'unsupported' : Notification.permission,
  );
  const pending = [...s.pending.values()].sort((a, b) => a.expires_at.localeCompare(b.expires_at));

  return (
    <section aria-labelledby="inbox-title">
      <div class="page-head">
        <div>
          <h1 id="inbox-title">Consent inbox</h1>
          <p class="muted">
            Requests waiting for a person, live. The first decision from any channel wins.
          </p>
        </div>
        {perm === 'default' && (
          <button
            class="btn ghost"
            onClick={() => void Notification.requestPermission().then(setPerm)}
          >
            Enable notifications
          </button>
        )}
      </div>
      {pending.length === 0 ? (
        <Empty title="Nothing waiting">New requests appear here the moment an agent asks.</Empty>
      ) : (
        <ul class="cards" aria-label="Pending consent requests">
          {pending.map((r) => (
            <li class="card request" key={r.id}>
              <div class="card-head">
                <div>
                  <p class="eyebrow">
                    <Clipped text={store.agentName(r.agent_id)} />
                  </p>
                  <h2 class="card-title">
                    <code>
                      <Clipped text={r.tool_name} />
                    </code>
                  </h2>
                </div>
                <span
                  class="countdown"
                  role="timer"
                  aria-label={`expires in ${countdown(r.expires_at, now)}`}
                >
                  {countdown(r.expires_at, now)}
                </span>
              </div>
              <p class="muted small">
                scope{' '}
                <code>
                  <Clipped text={r.scope} />
                </code>{' '}
                · <Preview text={r.reason} max={160} label="the reason" />
              </p>
              <Arguments args={r.arguments} compact />
              <div class="card-actions">
                <button
                  class="btn primary"
                  onClick={() => s.open(r.id)}
                  aria-label={`Review ${clippedText(r.tool_name)} request`}
                >
                  Review
                </button>
              </div>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
