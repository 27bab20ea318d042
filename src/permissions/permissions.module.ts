import { Global, Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CONSENT_PORT } from '../rules/tokens';
import { ConsentController } from './consent.controller';
import { ConsentGateway } from './consent.gateway';
import { ConsentRepository } from './consent.repository';
import { GrantsController } from './grants.controller';
import { BrokerConsentPort, PermissionBrokerService } from './permission-broker.service';

/** The PermissionBroker (also the executor's CONSENT_PORT), the consent WebSocket and its REST side. */
@Global()
@Module({
  imports: [AgentsModule],
  controllers: [ConsentController, GrantsController],
  providers: [
    ConsentRepository,
    PermissionBrokerService,
    ConsentGateway,
    { provide: CONSENT_PORT, useClass: BrokerConsentPort },
  ],
  exports: [PermissionBrokerService, CONSENT_PORT],
})
export class PermissionsModule {}
