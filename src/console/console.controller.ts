import { Controller, Get, Res } from '@nestjs/common';
import type { Response } from 'express';
import { Public } from '../auth/tenant.guard';
import { consoleBuilt } from './console-assets';

/** Answers /console when the static files are not there (a clone that skipped the build). */
@Controller()
export class ConsoleController {
  @Public()
  @Get('console')
  notBuilt(@Res() res: Response): void {
    if (consoleBuilt()) return res.redirect(301, '/console/');
    res
      .status(503)
      .type('text/plain')
      .send('The console is not built: run `npm run build:console` (npm install does it too).\n');
  }
}
