import { Logger } from '@nestjs/common';
import { Worker } from 'node:worker_threads';

/**
 * The checkpoints of a SQLite file in WAL mode, on a thread of their own. SQLite's automatic checkpoint
 * runs inside the commit that crosses 1,000 WAL pages: that commit copies the pages into the database
 * file and syncs both files on the event loop's thread (8–9 ms, one commit in ten under load: ~12 % of
 * a step's wall time, docs/performance.md). Here a second connection on a worker thread runs a PASSIVE
 * checkpoint every `intervalMs`: it never blocks the writer, and syncs the WAL at least that often, so an
 * idle server's last commits reach the disk within an interval instead of at the next busy moment.
 * The writer keeps an automatic checkpoint at BACKSTOP_PAGES, should the worker fall behind or die.
 */
export const BACKSTOP_PAGES = 10_000;

/** The worker's code (plain CommonJS, evaluated: nothing to compile or resolve at run time). */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('synchronous = NORMAL');
db.pragma('cache_size = -1024');
let failed = false;
const timer = setInterval(() => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    failed = false;
  } catch (e) {
    // SQLITE_BUSY and the like pass; the next interval tries again
    if (!failed) parentPort.postMessage({ warning: String(e && e.message) });
    failed = true;
  }
}, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
`;

export interface SqliteCheckpointer {
  /** Stops the worker after its current checkpoint and closes its connection. */
  stop(): Promise<void>;
}

/**
 * Starts checkpointing `file` every `intervalMs` on a worker thread. `onFailure` runs if the worker cannot
 * start or dies, so the caller gives the writer its own checkpoints back.
 */
export function startSqliteCheckpointer(
  file: string,
  intervalMs: number,
  onFailure: () => void,
): SqliteCheckpointer {
  const log = new Logger('Database');
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { file, intervalMs, driver: require.resolve('better-sqlite3') },
  });
  let stopping = false;
  worker.on('message', (m: { warning?: string }) => {
    if (m.warning) log.warn(`the checkpoint thread failed a checkpoint: ${m.warning}`);
  });
  worker.on('error', (e) => {
    log.error(`the checkpoint thread stopped (${e.message}); the writer checkpoints again`);
    onFailure();
  });
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.unref();
  return {
    async stop() {
      if (stopping) return exited;
      stopping = true;
      worker.postMessage('stop');
      // a checkpoint in progress ends first; one that hangs on the disk is not waited for forever
      const timeout = setTimeout(() => void worker.terminate(), 5_000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
