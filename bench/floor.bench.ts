/**
 * npm run bench:floor
 *
 * The same load generator and line format as `npm run bench`, against the floor server
 * (bench/servers/floor.server.ts: plain node:http + better-sqlite3, the same rows per conversation), so the
 * app's distance to its floor is one division. Env: CONVERSATIONS, CLIENTS, HISTORY as for `npm run bench`.
 */
import { benchServer } from './support/load-generator';

benchServer('servers/floor.server.ts').catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exit(1);
});
