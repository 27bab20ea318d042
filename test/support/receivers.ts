import { createServer, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Receivers of outbound posts (webhooks, run callbacks) on 127.0.0.1: every request is logged in arrival
 * order under its path (`/a`, `/b`, …); a path in `hang` is never answered until the test says so, any
 * other gets 200 at once.
 */
export async function startReceivers(hang: Set<string>) {
  const arrivals: string[] = [];
  const held: { path: string; res: ServerResponse }[] = [];
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      arrivals.push(path);
      if (hang.has(path)) held.push({ path, res });
      else res.end('ok');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    arrivals,
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
