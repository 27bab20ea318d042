import { Global, Module } from '@nestjs/common';
import { CLOCK, SystemClock } from './clock';
import { DefaultIdGenerator, ID_GENERATOR } from './ids';

/** The core's ports for time and ids, injectable everywhere; tests override CLOCK with a fake. */
@Global()
@Module({
  providers: [
    { provide: CLOCK, useClass: SystemClock },
    { provide: ID_GENERATOR, useClass: DefaultIdGenerator },
  ],
  exports: [CLOCK, ID_GENERATOR],
})
export class CoreProvidersModule {}
