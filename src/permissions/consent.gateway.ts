import { Inject, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import {
  OnGatewayConnection,
  OnGatewayDisconnect,
  OnGatewayInit,
  WebSocketGateway,
  WebSocketServer as InjectWsServer,
} from '@nestjs/websockets';
import type { IncomingMessage } from 'node:http';
import type { Subscription } from 'rxjs';
import { RawData, WebSocket, WebSocketServer } from 'ws';
import { ApiKeysService } from '../auth/api-keys.service';
import { RequestOriginPolicy } from '../auth/request-origin';
import { CLOCK } from '../common/clock';
import { EVENT_BUS, type EventBus } from '../cluster/event-bus';
import { toErrorBody } from '../common/domain-error.filter';
import { tooDeep } from '../common/json-body';
import { RunEvent, RunEventsBus } from '../common/run-events';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { Flood, refuseFrame } from '../core/limits/frame-flood';
import { Bucket, takeToken } from '../core/limits/token-bucket';
import type { Clock } from '../core/ports';
import type { ConsentRequestEntity } from './consent.entities';
import { resolvedFrameOf, toRequestFrame, toResolvedFrame } from './consent.mappers';
import { ConsentResolved, PermissionBrokerService } from './permission-broker.service';

interface Client {
  tenantId: string;
  /** null until the client subscribes. */
  agents: Set<string> | 'all' | null;
  /**
   * Consent requests this connection has been sent and that still wait, by id (→ agent id): a repeated
   * subscribe sends only what the connection has not seen, so it replaces, never multiplies, redelivery.
   */
  delivered: Map<string, string>;
  /** Subscribes are handled one after another; only the newest one redelivers. */
  subscribing: Promise<void>;
  subscriptions: number;
  /** frames per second (websocket.max_frames_per_second) */
  bucket: Bucket | undefined;
  /** The refusals of the current flood (`refuseFrame`): an error frame a second, closed once it persists. */
  flood: Flood | undefined;
}

/** Close code for a client that keeps breaking the frame rate (RFC 6455: policy violation). */
const POLICY_VIOLATION = 1008;

/**
 * The consent WebSocket at /v1/ws: plain JSON text frames (docs/permissions.md). Pushes consent requests and
 * their resolutions and run events to the subscribed clients of a tenant; takes decisions. A bad key never
 * gets a socket: the upgrade is refused with 401.
 */
@WebSocketGateway({ path: '/v1/ws' })
export class ConsentGateway
  implements OnGatewayInit, OnGatewayConnection, OnGatewayDisconnect, OnModuleInit, OnModuleDestroy
{
  private readonly logger = new Logger('ConsentGateway');
  private readonly clients = new Map<WebSocket, Client>();
  private readonly tenantOfUpgrade = new WeakMap<IncomingMessage, string>();
  /** Open (and upgrading) connections per API key (websocket.max_connections_per_key). */
  private readonly connectionsPerKey = new Map<string, number>();
  private readonly unsubscribe: (() => void)[] = [];
  private runEvents: Subscription | null = null;
  /** The ws server (the benchmark and tests reach the server-side sockets through it). */
  @InjectWsServer() server!: WebSocketServer;

  constructor(
    private readonly broker: PermissionBrokerService,
    private readonly keys: ApiKeysService,
    private readonly origins: RequestOriginPolicy,
    private readonly bus: RunEventsBus,
    @Inject(EVENT_BUS) private readonly events: EventBus,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(CLOCK) private readonly clock: Clock,
  ) {}

  onModuleInit(): void {
    // requests and resolutions of every instance, so a client may be connected to any of them
    this.unsubscribe.push(
      this.events.subscribe('consent.request', (r) => this.pushRequest(r)),
      this.events.subscribe('consent.resolved', (e) => this.pushResolved(e)),
    );
    this.runEvents = this.bus.events$.subscribe((e) => this.pushRunEvent(e));
  }

  onModuleDestroy(): void {
    this.unsubscribe.forEach((u) => u());
    this.runEvents?.unsubscribe();
  }

  afterInit(server: WebSocketServer): void {
    // ws consults these on every upgrade (also in noServer mode), so they can be set once the server exists
    server.options.maxPayload = this.config.server.body_limit_bytes;
    server.options.verifyClient = (
      info: { req: IncomingMessage },
      cb: (ok: boolean, code?: number, message?: string, headers?: Record<string, string>) => void,
    ) => {
      // a browser lets any page open a WebSocket anywhere: only the server's own pages (and the
      // configured origins) may, and in open mode only under a name of this server (DNS rebinding)
      const refused = this.origins.refusal(info.req, true);
      if (refused) {
        const { status, body } = toErrorBody(refused);
        return cb(false, status, JSON.stringify(body), { 'Content-Type': 'application/json' });
      }
      const who = this.keys.principalFor(keyOf(info.req));
      if (!who) return cb(false, 401, 'Unauthorized');
      const max = this.config.websocket.max_connections_per_key;
      const open = this.connectionsPerKey.get(who.key) ?? 0;
      if (open >= max) {
        const body = JSON.stringify({
          code: 'TOO_MANY_CONNECTIONS',
          message: `this API key already has ${max} WebSocket connections open`,
          details: { max_connections_per_key: max },
        });
        return cb(false, 429, body, { 'Content-Type': 'application/json' });
      }
      // counted from the upgrade to the socket's close (whether or not the upgrade completes)
      this.connectionsPerKey.set(who.key, open + 1);
      info.req.socket.once('close', () => {
        const n = (this.connectionsPerKey.get(who.key) ?? 1) - 1;
        if (n > 0) this.connectionsPerKey.set(who.key, n);
        else this.connectionsPerKey.delete(who.key);
      });
      this.tenantOfUpgrade.set(info.req, who.tenant);
      cb(true);
    };
  }

  handleConnection(ws: WebSocket, req: IncomingMessage): void {
    const tenantId = this.tenantOfUpgrade.get(req) ?? this.keys.tenantFor(keyOf(req));
    if (!tenantId) {
      ws.close(1008, 'unauthorized');
      return;
    }
    const client: Client = {
      tenantId,
      agents: null,
      delivered: new Map(),
      subscribing: Promise.resolve(),
      subscriptions: 0,
      bucket: undefined,
      flood: undefined,
    };
    this.clients.set(ws, client);
    ws.on('message', (data, isBinary) => this.admit(ws, client, data, isBinary));
  }

  handleDisconnect(ws: WebSocket): void {
    this.clients.delete(ws);
  }

  // ------------------------------------------------------------ client → server

  /** The frame rate bound (websocket.max_frames_per_second), then the frame is handled. */
  private admit(ws: WebSocket, client: Client, data: RawData, isBinary: boolean): void {
    const rate = this.config.websocket.max_frames_per_second;
    const now = this.clock.now();
    const taken = takeToken(client.bucket, rate, rate, now);
    client.bucket = taken.bucket;
    if (!taken.allowed) {
      const refused = refuseFrame(client.flood, rate, now);
      client.flood = refused.flood;
      if (refused.close) {
        ws.close(POLICY_VIOLATION, 'frame rate exceeded');
        return;
      }
      if (refused.warn)
        this.send(
          ws,
          error(
            'RATE_LIMITED',
            `more than ${rate} frames per second: frames are dropped until the rate falls; the connection closes if it persists`,
          ),
        );
      return;
    }
    this.onFrame(ws, client, data, isBinary).catch((e: unknown) => this.sendError(ws, e));
  }

  private async onFrame(
    ws: WebSocket,
    client: Client,
    data: RawData,
    isBinary: boolean,
  ): Promise<void> {
    if (isBinary) return this.send(ws, error('MALFORMED_FRAME', 'frames must be JSON text'));
    let frame: unknown;
    try {
      frame = JSON.parse(rawToString(data));
    } catch {
      return this.send(ws, error('MALFORMED_FRAME', 'frame is not valid JSON'));
    }
    if (typeof frame !== 'object' || frame === null || Array.isArray(frame))
      return this.send(ws, error('MALFORMED_FRAME', 'frame must be a JSON object'));
    const deep = tooDeep(frame, this.config.server.json_max_depth);
    if (deep) return this.send(ws, error(deep.code, deep.message));
    const f = frame as Record<string, unknown>;
    switch (f.type) {
      case 'ping':
        return this.send(ws, { type: 'pong' });
      case 'subscribe': {
        const n = ++client.subscriptions;
        client.subscribing = client.subscribing
          .then(() => this.subscribe(ws, client, f, n))
          .catch((e: unknown) => this.sendError(ws, e));
        return client.subscribing;
      }
      case 'consent.decision':
        return this.decide(ws, client, f);
      default:
        return this.send(
          ws,
          error(
            'UNKNOWN_FRAME_TYPE',
            `unknown frame type ${JSON.stringify(f.type)}: expected subscribe, consent.decision or ping`,
          ),
        );
    }
  }

  private async subscribe(
    ws: WebSocket,
    client: Client,
    f: Record<string, unknown>,
    /** This subscribe's number on the connection: a newer one replaces its redelivery. */
    n: number,
  ): Promise<void> {
    const ids = f.agent_ids;
    const max = this.config.websocket.max_subscriptions_per_connection;
    let agents: Set<string> | 'all';
    if (ids === undefined || ids === null || (Array.isArray(ids) && ids.length === 0))
      agents = 'all';
    else if (Array.isArray(ids) && ids.length > max)
      return this.send(
        ws,
        error(
          'TOO_MANY_SUBSCRIPTIONS',
          `a connection follows at most ${max} agents (or all of them: agent_ids omitted)`,
        ),
      );
    else if (
      Array.isArray(ids) &&
      ids.every(
        (i) => typeof i === 'string' && i.length > 0 && i.length <= 200 && !i.includes('\u0000'),
      )
    )
      agents = new Set(ids as string[]);
    else return this.send(ws, error('VALIDATION_FAILED', 'agent_ids must be a list of agent ids'));
    // the new subscription replaces the old one; what it no longer covers may be sent again later
    client.agents = agents;
    for (const [id, agentId] of client.delivered)
      if (!this.follows(client, client.tenantId, agentId)) client.delivered.delete(id);
    this.send(ws, { type: 'subscribed', agent_ids: agents === 'all' ? null : [...agents] });
    // a newer subscribe (already waiting) replaces this one: it redelivers instead
    if (n !== client.subscriptions) return;
    // a client that connects (or reconnects) late still sees what waits for an answer, once
    const pending = await this.broker.pendingFor(
      client.tenantId,
      agents === 'all' ? null : [...agents],
    );
    if (n !== client.subscriptions) return;
    for (const r of pending) {
      if (client.delivered.has(r.id) || !this.follows(client, r.tenantId, r.agentId)) continue;
      client.delivered.set(r.id, r.agentId);
      this.send(ws, { type: 'consent.request', request: toRequestFrame(r) });
    }
  }

  private async decide(ws: WebSocket, client: Client, f: Record<string, unknown>): Promise<void> {
    const id = f.request_id;
    if (typeof id !== 'string' || id.length === 0 || id.length > 200 || id.includes('\u0000'))
      return this.send(ws, error('VALIDATION_FAILED', 'request_id must be a consent request id'));
    try {
      const { request } = await this.broker.decide(client.tenantId, id, f, 'ws');
      // subscribers got consent.resolved already; a deciding client that is not one still learns the outcome
      if (!this.follows(client, request.tenantId, request.agentId))
        this.send(ws, resolvedFrameOf(request));
    } catch (e) {
      this.sendError(ws, e, id);
    }
  }

  // ------------------------------------------------------------ server → clients

  private pushRequest(r: ConsentRequestEntity): void {
    let text: string | null = null;
    for (const [ws, c] of this.clients) {
      if (!this.follows(c, r.tenantId, r.agentId) || c.delivered.has(r.id)) continue;
      c.delivered.set(r.id, r.agentId);
      text ??= JSON.stringify({ type: 'consent.request', request: toRequestFrame(r) });
      this.sendText(ws, text);
    }
  }

  private pushResolved(e: ConsentResolved): void {
    for (const c of this.clients.values()) c.delivered.delete(e.requestId);
    this.broadcast(e.tenantId, e.agentId, toResolvedFrame(e));
  }

  private pushRunEvent(e: RunEvent): void {
    this.broadcast(e.tenantId, e.agentId, {
      type: 'run.event',
      event: e.type,
      agent_id: e.agentId,
      run_id: e.runId,
      data: e.data,
    });
  }

  private follows(c: Client, tenantId: string, agentId: string): boolean {
    return (
      c.tenantId === tenantId && c.agents !== null && (c.agents === 'all' || c.agents.has(agentId))
    );
  }

  private broadcast(tenantId: string, agentId: string, frame: object): void {
    let text: string | null = null;
    for (const [ws, c] of this.clients) {
      if (!this.follows(c, tenantId, agentId)) continue;
      text ??= JSON.stringify(frame);
      this.sendText(ws, text);
    }
  }

  private send(ws: WebSocket, frame: object): void {
    this.sendText(ws, JSON.stringify(frame));
  }

  private sendText(ws: WebSocket, text: string): void {
    if (ws.readyState !== WebSocket.OPEN) return;
    // a client this far behind on reading is dropped rather than buffered without bound
    if (ws.bufferedAmount > this.config.websocket.max_buffered_bytes) {
      this.logger.warn('closing a WebSocket client that does not read its frames');
      ws.close(1013, 'too slow');
      return;
    }
    ws.send(text);
  }

  private sendError(ws: WebSocket, e: unknown, ref?: string): void {
    const { status, body } = toErrorBody(e);
    if (status >= 500) this.logger.error(e instanceof Error ? (e.stack ?? e.message) : String(e));
    this.send(ws, {
      type: 'error',
      code: body.code,
      message: body.message,
      ...(ref ? { ref } : {}),
    });
  }
}

function error(code: string, message: string) {
  return { type: 'error', code, message };
}

/** The key from `Authorization: Bearer` on the upgrade, else `?token=` (browsers cannot set headers). */
function keyOf(req: IncomingMessage): string | null {
  const fromHeader = ApiKeysService.keyFromHeaders(req.headers);
  if (fromHeader) return fromHeader;
  try {
    return new URL(req.url ?? '/', 'http://localhost').searchParams.get('token');
  } catch {
    return null;
  }
}

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
