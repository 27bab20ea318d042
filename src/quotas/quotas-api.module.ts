import { Module } from '@nestjs/common';
import { ProcessingModule } from '../processing/processing.module';
import { QuotaUsageService } from './quota-usage.service';
import { QuotasController } from './quotas.controller';

/** `GET /v1/quotas`: apart from QuotasModule, which every feature's creates use, as it reads the mailbox. */
@Module({
  imports: [ProcessingModule],
  controllers: [QuotasController],
  providers: [QuotaUsageService],
})
export class QuotasApiModule {}
