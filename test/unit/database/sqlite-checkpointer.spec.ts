import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startSqliteCheckpointer } from '../../../src/database/sqlite-checkpointer';

// the copying itself: test/e2e/sqlite-checkpoints.e2e-spec.ts, through the app
describe('startSqliteCheckpointer', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'checkpointer-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('tells its caller when the thread cannot run, so the writer checkpoints again', async () => {
    const failed = jest.fn();
    const checkpointer = startSqliteCheckpointer(path.join(dir, 'missing.sqlite'), 10, failed);
    await checkpointer.stop();
    expect(failed).toHaveBeenCalledTimes(1);
  });
});
