import { Injectable } from '@nestjs/common';
import { DataSource, EntityManager } from 'typeorm';

/**
 * Runs a unit of work in a transaction. SQLite has a single connection in TypeORM, so two
 * transactions started concurrently would collide ("cannot start a transaction within a transaction");
 * on SQLite they are queued here, one after another. PostgreSQL runs them concurrently.
 */
@Injectable()
export class Transactor {
  private tail: Promise<unknown> = Promise.resolve();
  private readonly serial: boolean;

  constructor(private readonly dataSource: DataSource) {
    this.serial = dataSource.options.type === 'sqlite';
  }

  run<T>(work: (em: EntityManager) => Promise<T>): Promise<T> {
    if (!this.serial) return this.dataSource.transaction(work);
    const next = this.tail.then(() => this.dataSource.transaction(work));
    this.tail = next.catch(() => undefined);
    return next;
  }
}
