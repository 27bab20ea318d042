import { Controller, Get } from '@nestjs/common';
import { Public } from '../auth/tenant.guard';
import { APP_VERSION } from '../common/version';

@Controller('v1/health')
export class HealthController {
  @Public()
  @Get()
  health(): { status: string; version: string } {
    return { status: 'ok', version: APP_VERSION };
  }
}
