import { Logger } from '@nestjs/common';
import { createApp } from './bootstrap';
import { ConfigError, loadConfig } from './config/app-config';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(1);
    }
    throw e;
  }
  const app = await createApp(config);
  await app.listen(config.server.port, config.server.host);
  new Logger('Server').log(`listening on ${await app.getUrl()}`);
}

main().catch((e: unknown) => {
  // Boot failures (a broken agent file, an unreachable database) end with one line and exit 1.
  process.stderr.write(`boot failed: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
