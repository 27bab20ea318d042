import { Logger } from '@nestjs/common';
import { AbstractLogger, LogLevel, LogMessage, LoggerOptions } from 'typeorm';
import { isAnsweredConflict } from './unique-violation';

/**
 * TypeORM's log through the app's logger (so LOG_FORMAT=json holds for it too). A failed statement is
 * logged with its SQL and error, never its parameters (tenant data, sealed secrets); a unique conflict its
 * caller answers (answeringConflicts) is not logged at all.
 */
export class QueryLogger extends AbstractLogger {
  private readonly logger = new Logger('Database');

  constructor(options: LoggerOptions) {
    super(options);
  }

  override logQueryError(error: unknown, query: string): void {
    if (!this.isLogEnabledFor('query-error') || isAnsweredConflict(error)) return;
    const message = (error as { message?: unknown } | null)?.message;
    const text = typeof message === 'string' ? message : String(error);
    this.logger.error(`query failed: ${query} -- ${text}`);
  }

  protected writeLog(
    level: LogLevel,
    message: LogMessage | string | number | (LogMessage | string | number)[],
  ): void {
    for (const m of this.prepareLogMessages(message, { highlightSql: false })) {
      const text = m.prefix ? `${m.prefix}: ${String(m.message)}` : String(m.message);
      const type = m.type ?? level;
      if (type === 'error' || type === 'query-error') this.logger.error(text);
      else if (type === 'warn' || type === 'query-slow') this.logger.warn(text);
      else this.logger.log(text);
    }
  }
}
