import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { WsAdapter } from '@nestjs/platform-ws';
import { AppModule } from './app.module';
import { RequestOriginPolicy } from './auth/request-origin';
import { RequestRateLimiter } from './auth/request-rate.limiter';
import { StreamSlotsLimiter } from './auth/stream-slots.limiter';
import { AppConfig } from './config/app-config';
import { answerClientErrors } from './common/client-errors';
import { jsonBodyMiddleware, nulInUrlMiddleware } from './common/json-body';
import { notSupportedMiddleware } from './common/not-supported';
import { createPino, PinoNestLogger } from './observability/logger';
import { requestLog } from './observability/request-log';
import { serveApiDocs } from './openapi/openapi';
import { serveConsole } from './console/console-assets';
import { withSecretsKeyFile } from './secrets/secrets-key-file';

/** Builds the app from a validated config: used by main.ts and by the e2e tests (port 0). */
export async function createApp(given: AppConfig): Promise<INestApplication> {
  const format =
    given.log_format === 'auto' ? (process.stdout.isTTY ? 'pretty' : 'json') : given.log_format;
  const logger = new PinoNestLogger(createPino(given.log_level, format));
  const { config, note } = withSecretsKeyFile(given);
  if (note) logger.log(note, 'Secrets');
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    logger,
    // Throw instead of process.exit(1): main.ts prints one line and exits; tests see the error.
    abortOnError: false,
  });
  answerClientErrors(app.getHttpServer());
  app.use(requestLog(logger.pino));
  // a page of another origin, or of a rebound name in open mode, gets nothing (src/auth/request-origin.ts)
  app.use(app.get(RequestOriginPolicy).middleware());
  // the rate is checked before a body is read
  app.use(app.get(RequestRateLimiter).handle);
  app.use(nulInUrlMiddleware());
  app.use(notSupportedMiddleware());
  app.use(...jsonBodyMiddleware(config.server.body_limit_bytes, config.server.json_max_depth));
  app.use(app.get(StreamSlotsLimiter).handle);
  app.useWebSocketAdapter(new WsAdapter(app));
  serveApiDocs(app);
  serveConsole(app);
  app.enableShutdownHooks();
  return app;
}
