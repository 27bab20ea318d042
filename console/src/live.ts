import { session, type ConsentRequest, type Resolved } from './api';

/** A run event as the gateway forwards it. */
export interface RunEventFrame {
  type: 'run.event';
  event: string;
  agent_id: string;
  run_id: string;
  data: Record<string, unknown>;
}

type Frame =
  | { type: 'consent.request'; request: ConsentRequest }
  | Resolved
  | RunEventFrame
  | { type: 'subscribed' | 'pong' }
  | { type: 'error'; code: string; message: string; ref?: string };

type Listener = (f: Frame) => void;
export type LiveState = 'connecting' | 'live' | 'offline';

/**
 * The console's one WebSocket to /v1/ws: subscribes to every agent of the tenant, hands frames to
 * listeners, and reconnects with backoff (a resubscribe redelivers pending requests).
 */
export class Live {
  private ws: WebSocket | null = null;
  private readonly listeners = new Set<Listener>();
  private readonly stateListeners = new Set<(s: LiveState) => void>();
  private retry = 0;
  private closed = false;
  private timer: number | undefined;
  state: LiveState = 'connecting';

  start(): void {
    this.closed = false;
    this.connect();
  }

  stop(): void {
    this.closed = true;
    window.clearTimeout(this.timer);
    this.ws?.close();
  }

  on(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  onState(l: (s: LiveState) => void): () => void {
    this.stateListeners.add(l);
    return () => this.stateListeners.delete(l);
  }

  send(frame: object): boolean {
    if (this.ws?.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }

  private setState(s: LiveState): void {
    this.state = s;
    this.stateListeners.forEach((l) => l(s));
  }

  private connect(): void {
    const key = session.key();
    const url = new URL('/v1/ws', location.href);
    url.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
    if (key) url.searchParams.set('token', key);
    this.setState('connecting');
    const ws = new WebSocket(url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 0;
      ws.send(JSON.stringify({ type: 'subscribe' }));
    };
    ws.onmessage = (m) => {
      let f: Frame;
      try {
        f = JSON.parse(String(m.data)) as Frame;
      } catch {
        return;
      }
      if (f.type === 'subscribed') this.setState('live');
      this.listeners.forEach((l) => l(f));
    };
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.setState('offline');
      if (this.closed) return;
      const wait = Math.min(10_000, 500 * 2 ** this.retry++);
      this.timer = window.setTimeout(() => this.connect(), wait);
    };
  }
}

export const live = new Live();
