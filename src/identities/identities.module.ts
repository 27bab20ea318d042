import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdentitiesController } from './identities.controller';
import { IdentitiesRepository } from './identities.repository';
import { IdentitiesService } from './identities.service';
import { IDENTITY_ENTITIES } from './identity.entity';

/** Letta's identities; the agents module imports it (identity_ids, attach, filters). */
@Module({
  imports: [TypeOrmModule.forFeature(IDENTITY_ENTITIES)],
  controllers: [IdentitiesController],
  providers: [IdentitiesRepository, IdentitiesService],
  exports: [IdentitiesService],
})
export class IdentitiesModule {}
