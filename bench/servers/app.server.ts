/** The real app (SQLite file, every message persisted) as the benchmarked server of `npm run bench`. */
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { DEFAULT_TENANT } from '../../src/config/app-config';
import { ProcessingRepository } from '../../src/processing/processing.repository';
import { startApp } from '../../test/support/app-harness';
import { seedText, serveBench } from '../support/server-process';

serveBench(async () => {
  // the server as deployed: without the e2e harness's OpenAPI checks of every request and response
  const t = await startApp({ checkContract: false });
  const repo = t.app.get(ProcessingRepository);
  return {
    baseUrl: t.baseUrl,
    seedHistory: async (agentId, n) => {
      const at = Date.now();
      for (let i = 0; i < n; i += 500) {
        const rows = Array.from({ length: Math.min(500, n - i) }, (_, j) => {
          const { type, content } = seedText(i + j);
          return {
            id: `message-${randomUUID()}`,
            tenant_id: DEFAULT_TENANT,
            agent_id: agentId,
            run_id: null,
            step_id: null,
            batch_id: null,
            conversation_id: null,
            message_type: type,
            payload: { content },
            created_at: at,
          };
        });
        await repo.append(agentId, rows);
      }
      // a server with this history has long checkpointed it: the seed's WAL is not the measurement's
      await t.app.get(DataSource).query('PRAGMA wal_checkpoint(TRUNCATE)');
    },
    close: () => t.close(),
  };
});
