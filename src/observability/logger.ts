import type { LoggerService } from '@nestjs/common';
import pino, { Logger as Pino } from 'pino';
import pretty from 'pino-pretty';
import type { LogLevel } from '../config/app-config';

export type LogFormat = 'json' | 'pretty';

/** Header and field names whose values are never written to a log line. */
const REDACT = [
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  '*.headers.cookie',
  'api_key',
  '*.api_key',
];

/** One pino logger for the process: JSON lines, or readable lines on a terminal. */
export function createPino(level: LogLevel, format: LogFormat): Pino {
  const options = {
    level,
    base: { pid: process.pid },
    redact: { paths: REDACT, censor: '[redacted]' },
  };
  return format === 'pretty'
    ? pino(options, pretty({ colorize: true, sync: true, ignore: 'pid,hostname' }))
    : pino(options);
}

/** Nest's start-up chatter (every route mapped, every module loaded): kept for debug. */
const CHATTER = new Set([
  'RouterExplorer',
  'RoutesResolver',
  'InstanceLoader',
  'WebSocketsController',
]);

/** Nest's Logger API on pino: `new Logger('Ctx').log(...)` anywhere in the app ends up here. */
export class PinoNestLogger implements LoggerService {
  constructor(readonly pino: Pino) {}

  log(message: unknown, ...rest: unknown[]): void {
    const context = contextOf(rest);
    this.write(context && CHATTER.has(context) ? 'debug' : 'info', message, context);
  }
  error(message: unknown, ...rest: unknown[]): void {
    const context = contextOf(rest);
    const stack = rest.find((r) => typeof r === 'string' && r.includes('\n    at '));
    this.write('error', message, context, typeof stack === 'string' ? { stack } : {});
  }
  warn(message: unknown, ...rest: unknown[]): void {
    this.write('warn', message, contextOf(rest));
  }
  debug(message: unknown, ...rest: unknown[]): void {
    this.write('debug', message, contextOf(rest));
  }
  verbose(message: unknown, ...rest: unknown[]): void {
    this.write('trace', message, contextOf(rest));
  }
  fatal(message: unknown, ...rest: unknown[]): void {
    this.write('fatal', message, contextOf(rest));
  }

  private write(
    level: 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal',
    message: unknown,
    context: string | undefined,
    extra: Record<string, unknown> = {},
  ): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields = { ...(context ? { context } : {}), ...extra };
    if (message instanceof Error) this.pino[level]({ ...fields, err: message }, message.message);
    else if (typeof message === 'object' && message !== null)
      this.pino[level]({ ...fields, ...message });
    else this.pino[level](fields, String(message));
  }
}

/** Nest passes the context as the last string argument. */
function contextOf(rest: unknown[]): string | undefined {
  const last = rest[rest.length - 1];
  return typeof last === 'string' && !last.includes('\n') ? last : undefined;
}
