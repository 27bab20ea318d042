import type { NestExpressApplication } from '@nestjs/platform-express';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import type { ServerResponse } from 'node:http';
import { projectRoot } from '../config/app-config';

/** Where `npm run build:console` puts the console (Vite's output). */
export const consoleDir = (): string => path.join(projectRoot(), 'dist', 'console');

export const consoleBuilt = (): boolean => existsSync(path.join(consoleDir(), 'index.html'));

/**
 * The console's headers: it holds an API key in session storage, so no script, frame or connection may
 * come from anywhere but this origin; hashed assets are cached for good, the page itself never.
 */
function setHeaders(res: ServerResponse, file: string): void {
  res.setHeader(
    'content-security-policy',
    // 'self' covers the page's own ws:// and wss:// origin (CSP Level 3); `ws:` would allow any host
    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; " +
      "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'",
  );
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader(
    'cache-control',
    file.includes(`${path.sep}assets${path.sep}`)
      ? 'public, max-age=31536000, immutable'
      : 'no-cache',
  );
}

/** Serves the built console at /console/ (same origin as the API, so no CORS and no separate install). */
export function serveConsole(app: NestExpressApplication): void {
  app.useStaticAssets(consoleDir(), { prefix: '/console/', index: 'index.html', setHeaders });
}
