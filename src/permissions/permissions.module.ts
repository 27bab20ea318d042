import { Global, Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CONSENT_PORT } from '../rules/tokens';
import { ConsentController } from './consent.controller';
import { ConsentGateway } from './consent.gateway';
import { ConsentRepository } from './consent.repository';
import { GrantsController } from './grants.controller';
import { PermissionBrokerService } from './permission-broker.service';

/** The PermissionBroker (also the executor's CONSENT_PORT), the consent WebSocket and its REST side. */
@Global()
@Module({
  imports: [AgentsModule],
  controllers: [ConsentController, GrantsController],
  providers: [
    ConsentRepository,
    PermissionBrokerService,
    ConsentGateway,
    // the broker is the executor's consent port: the same instance, not a copy
    { provide: CONSENT_PORT, useExisting: PermissionBrokerService },
  ],
  exports: [PermissionBrokerService, CONSENT_PORT],
})
export class PermissionsModule {}
