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
import { toErrorBody } from '../common/domain-error.filter';
import { RunEvent, RunEventsBus } from '../common/run-events';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import type { ConsentRequestEntity } from './consent.entities';
import { resolvedFrameOf, toRequestFrame, toResolvedFrame } from './consent.mappers';
import { ConsentResolved, PermissionBrokerService } from './permission-broker.service';

interface Client {
  tenantId: string;
  /** null until the client subscribes. */
  agents: Set<string> | 'all' | null;
}

const MAX_AGENT_IDS = 1000;
/** A client this far behind on reading is dropped rather than buffered without bound. */
const MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

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
  private readonly unsubscribe: (() => void)[] = [];
  private runEvents: Subscription | null = null;
  /** The ws server (the benchmark and tests reach the server-side sockets through it). */
  @InjectWsServer() server!: WebSocketServer;

  constructor(
    private readonly broker: PermissionBrokerService,
    private readonly keys: ApiKeysService,
    private readonly bus: RunEventsBus,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onModuleInit(): void {
    this.unsubscribe.push(
      this.broker.onRequest((r) => this.pushRequest(r)),
      this.broker.onDecision((e) => this.pushResolved(e)),
      this.broker.onCancelled((e) => this.pushResolved(e)),
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
      cb: (ok: boolean, code?: number, message?: string) => void,
    ) => {
      const tenant = this.keys.tenantFor(keyOf(info.req));
      if (!tenant) return cb(false, 401, 'Unauthorized');
      this.tenantOfUpgrade.set(info.req, tenant);
      cb(true);
    };
  }

  handleConnection(ws: WebSocket, req: IncomingMessage): void {
    const tenantId = this.tenantOfUpgrade.get(req) ?? this.keys.tenantFor(keyOf(req));
    if (!tenantId) {
      ws.close(1008, 'unauthorized');
      return;
    }
    const client: Client = { tenantId, agents: null };
    this.clients.set(ws, client);
    ws.on('message', (data, isBinary) => {
      this.onFrame(ws, client, data, isBinary).catch((e: unknown) => this.sendError(ws, e));
    });
  }

  handleDisconnect(ws: WebSocket): void {
    this.clients.delete(ws);
  }

  // ------------------------------------------------------------ client → server

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
    const f = frame as Record<string, unknown>;
    switch (f.type) {
      case 'ping':
        return this.send(ws, { type: 'pong' });
      case 'subscribe':
        return this.subscribe(ws, client, f);
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
  ): Promise<void> {
    const ids = f.agent_ids;
    let agents: Set<string> | 'all';
    if (ids === undefined || ids === null || (Array.isArray(ids) && ids.length === 0))
      agents = 'all';
    else if (
      Array.isArray(ids) &&
      ids.length <= MAX_AGENT_IDS &&
      ids.every(
        (i) => typeof i === 'string' && i.length > 0 && i.length <= 200 && !i.includes('\u0000'),
      )
    )
      agents = new Set(ids as string[]);
    else
      return this.send(
        ws,
        error(
          'VALIDATION_FAILED',
          `agent_ids must be a list of at most ${MAX_AGENT_IDS} agent ids`,
        ),
      );
    client.agents = agents;
    this.send(ws, { type: 'subscribed', agent_ids: agents === 'all' ? null : [...agents] });
    // a client that connects (or reconnects) late still sees what waits for an answer
    const pending = await this.broker.pendingFor(
      client.tenantId,
      agents === 'all' ? null : [...agents],
    );
    for (const r of pending) this.send(ws, { type: 'consent.request', request: toRequestFrame(r) });
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
    this.broadcast(r.tenantId, r.agentId, { type: 'consent.request', request: toRequestFrame(r) });
  }

  private pushResolved(e: ConsentResolved): void {
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
    if (ws.bufferedAmount > MAX_BUFFERED_BYTES) {
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
