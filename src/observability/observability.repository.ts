import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { ConsentRequestEntity } from '../permissions/consent.entities';
import { RunEntity } from '../processing/entities/run.entity';

/** Read-only counts for gauges, from the database so they are exact whatever instance is scraped. */
@Injectable()
export class ObservabilityRepository {
  constructor(private readonly dataSource: DataSource) {}

  pendingConsentCount(): Promise<number> {
    return this.dataSource.getRepository(ConsentRequestEntity).countBy({ status: 'pending' });
  }

  queuedRunCount(): Promise<number> {
    return this.dataSource.getRepository(RunEntity).countBy({ status: 'created' });
  }
}
