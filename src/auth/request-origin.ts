import type { IncomingHttpHeaders } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../common/domain-error';
import { toErrorBody } from '../common/domain-error.filter';
import type { AppConfig } from '../config/app-config';
import { ServedNames } from '../core/net/host-policy';

/** Methods a browser lets any page send cross-site whose answer it then hides: reads, never refused by origin. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * What a web page in a browser on the server's machine (or network) may make this server do. A browser
 * lets any page open a WebSocket to any host and send simple cross-site POSTs (`multipart/form-data`,
 * `text/plain`, no body). In open mode (no API keys) such a request needs no credential, so a WebSocket
 * upgrade, and any request that is not a read (GET, HEAD, OPTIONS), whose `Origin` header is present and
 * is not the server's own (the `Host` it was sent to), `webhooks.public_url`'s, nor in
 * `server.allowed_origins`, is refused with 403 `ORIGIN_NOT_ALLOWED`. Clients that send no `Origin` (SDKs,
 * the ws library, curl) are unaffected. With API keys the key decides: a page holds none (the console keeps
 * its key in the tab's session storage, never in a cookie), so nothing is checked here.
 *
 * DNS rebinding: a page whose own name the attacker resolves to this server's address is its same origin
 * as far as the browser knows, and may read what it is answered. So in open mode, when the server listens
 * on the loopback (only this machine's clients, which reach it by an address or `localhost`) or the
 * operator named its hosts (`server.allowed_hosts`), a request addressed to any other name is refused with
 * 403 `HOST_NOT_ALLOWED`, reads included.
 */
export class RequestOriginPolicy {
  private readonly allowedOrigins: Set<string>;
  /** null: any name answers (listening beyond the loopback, no names set). */
  private readonly served: ServedNames | null;

  constructor(
    config: Pick<AppConfig, 'server' | 'webhooks' | 'auth'>,
    private readonly open = config.auth.api_keys.length === 0,
  ) {
    const publicUrl = config.webhooks.public_url ? new URL(config.webhooks.public_url) : null;
    this.allowedOrigins = new Set([
      ...config.server.allowed_origins,
      ...(publicUrl ? [publicUrl.origin] : []),
    ]);
    const { allowed_hosts: names, host } = config.server;
    this.served =
      open && (names.length > 0 || LOOPBACK.test(host))
        ? new ServedNames([...names, ...[...this.allowedOrigins].map((o) => new URL(o).hostname)])
        : null;
  }

  /** Why this request (or WebSocket upgrade) is refused, or null. */
  refusal(
    req: { method?: string; headers: IncomingHttpHeaders },
    upgrade = false,
  ): DomainError | null {
    if (!this.open) return null;
    const name = this.served?.refused(header(req.headers.host)) ?? null;
    if (name !== null)
      return new DomainError(
        'forbidden',
        'HOST_NOT_ALLOWED',
        `a request addressed to the name ${JSON.stringify(name.slice(0, 200))} is refused: without API keys this server answers only to its IP addresses, localhost and the names in server.allowed_hosts (a web page could reach it under a DNS name rebound to it)`,
        { setting: 'server.allowed_hosts' },
      );
    const origin = header(req.headers.origin);
    if (origin === undefined || (!upgrade && SAFE_METHODS.has(req.method ?? 'GET'))) return null;
    if (this.originAllowed(origin, req.headers.host)) return null;
    return new DomainError(
      'forbidden',
      'ORIGIN_NOT_ALLOWED',
      `a request from the web page origin ${JSON.stringify(origin.slice(0, 200))} is refused: only this server's own pages and the origins in server.allowed_origins may call it from a browser`,
      { setting: 'server.allowed_origins' },
    );
  }

  /** Express middleware: the refusal answered in the one error shape, before anything else runs. */
  middleware(): RequestHandler {
    return (req: Request, res: Response, next: NextFunction) => {
      const refused = this.refusal(req);
      if (!refused) return next();
      const { status, body } = toErrorBody(refused);
      res.status(status).json(body);
    };
  }

  private originAllowed(origin: string, host: string | undefined): boolean {
    let url: URL;
    try {
      url = new URL(origin); // "null" (sandboxed frames, file:) does not parse: refused
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
    if (this.allowedOrigins.has(url.origin)) return true;
    if (host === undefined) return false;
    // the server's own page: same host and port as the request went to. http or https alike, so the
    // console behind a TLS-terminating proxy that keeps the Host is its own origin
    try {
      return new URL(`${url.protocol}//${host}`).host === url.host;
    } catch {
      return false;
    }
  }
}

/** A listening address only this machine reaches. */
const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|\[::1\]|localhost)$/i;

function header(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
