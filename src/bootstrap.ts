import 'reflect-metadata';
import { INestApplication, LogLevel as NestLogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { WsAdapter } from '@nestjs/platform-ws';
import { AppModule } from './app.module';
import { AppConfig, LogLevel } from './config/app-config';
import { jsonBodyMiddleware } from './common/json-body';

const LEVELS: Record<LogLevel, NestLogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/** Builds the app from a validated config: used by main.ts and by the e2e tests (port 0). */
export async function createApp(config: AppConfig): Promise<INestApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bodyParser: false,
    logger: LEVELS[config.log_level],
    // Throw instead of process.exit(1): main.ts prints one line and exits; tests see the error.
    abortOnError: false,
  });
  app.use(...jsonBodyMiddleware(config.server.body_limit_bytes, config.server.json_max_depth));
  app.useWebSocketAdapter(new WsAdapter(app));
  app.enableShutdownHooks();
  return app;
}
