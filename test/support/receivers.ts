import { createServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Receivers of outbound posts (webhooks, run callbacks) on 127.0.0.1: every request is logged in arrival
 * order under its path (`/a`, `/b`, …), with its body; a path in `hang` is never answered until the test
 * says so, any other is answered at once with `status(path, n)` (its n-th arrival, from 1), 200 unless told.
 */
export async function startReceivers(
  hang: Set<string>,
  status: (path: string, n: number) => number = () => 200,
) {
  const arrivals: string[] = [];
  const bodies: { path: string; body: string }[] = [];
  const held: { path: string; res: ServerResponse }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const path = req.url ?? '/';
      arrivals.push(path);
      bodies.push({ path, body });
      if (hang.has(path)) held.push({ path, res });
      else {
        res.statusCode = status(path, arrivals.filter((a) => a === path).length);
        res.end('ok');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    arrivals,
    bodies,
    held,
    /** Answers the oldest held request of `path` with 200. */
    answerOne(path: string) {
      const i = held.findIndex((h) => h.path === path);
      held.splice(i, 1)[0].res.end('ok');
    },
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Waits, polling, until `cond` holds. */
export async function until(cond: () => boolean | Promise<boolean>): Promise<void> {
  while (!(await cond())) await new Promise((r) => setTimeout(r, 10));
}
