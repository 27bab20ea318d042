/**
 * The example agents' http tools, served on 127.0.0.1 so the README tour runs end to end offline:
 * 8290 answers the refund desk (lookup_order, issue_refund), 8291 the release bot (run_tests, deploy, rollback).
 * Run it beside the server: `npm run example:tools`. The refunds route wants `Authorization: Bearer demo`,
 * the token `issue_refund` gets from the tenant secret REFUNDS_API_TOKEN (config/default.yaml `secrets.config`).
 */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';

type Handler = (args: Record<string, unknown>) => unknown;

/** The example refunds service's API token. */
const REFUNDS_TOKEN = 'demo';
/** Routes that want the token. */
const AUTHORIZED = new Set(['/refunds']);

const ROUTES: Record<number, Record<string, Handler>> = {
  8290: {
    '/orders/lookup': (a) => ({ order_id: a.order_id, status: 'delivered', paid_cents: 1999 }),
    '/refunds': (a) => ({
      refund_id: `rf_${String(a.order_id)}`,
      amount_cents: a.amount_cents,
      status: 'issued',
    }),
  },
  8291: {
    '/ci/test': (a) => ({ service: a.service, ref: a.ref, passed: 128, failed: 0 }),
    '/cd/deploy': (a) => ({
      service: a.service,
      ref: a.ref,
      environment: a.environment,
      status: 'deployed',
    }),
    '/cd/rollback': (a) => ({
      service: a.service,
      environment: a.environment,
      status: 'rolled back',
    }),
  },
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString('utf8')));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

export function startExampleToolServers(): Promise<Server[]> {
  return Promise.all(
    Object.entries(ROUTES).map(
      ([port, routes]) =>
        new Promise<Server>((resolve, reject) => {
          const server = createServer((req: IncomingMessage, res: ServerResponse) => {
            void readBody(req).then((raw) => {
              const handler = routes[(req.url ?? '').split('?')[0]];
              const send = (status: number, value: unknown) => {
                res.writeHead(status, { 'content-type': 'application/json' });
                res.end(JSON.stringify(value));
              };
              const route = (req.url ?? '').split('?')[0];
              if (!handler) return send(404, { error: 'no such tool route' });
              if (AUTHORIZED.has(route) && req.headers.authorization !== `Bearer ${REFUNDS_TOKEN}`)
                return send(401, { error: 'a bearer token is required' });
              try {
                const { arguments: args } = JSON.parse(raw || '{}') as {
                  arguments?: Record<string, unknown>;
                };
                send(200, handler(args ?? {}));
              } catch {
                send(400, {
                  error: 'body must be JSON {arguments, agent_id, run_id, tool_call_id}',
                });
              }
            });
          });
          server.once('error', reject); // e.g. EADDRINUSE: another example tool server runs already
          server.listen(Number(port), '127.0.0.1', () => resolve(server));
        }),
    ),
  );
}

if (require.main === module) {
  void startExampleToolServers().then(() =>
    process.stdout.write('example tools on http://127.0.0.1:8290 and http://127.0.0.1:8291\n'),
  );
}
