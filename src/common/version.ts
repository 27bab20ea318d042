import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { projectRoot } from '../config/app-config';

export const APP_VERSION: string = (
  JSON.parse(readFileSync(path.join(projectRoot(), 'package.json'), 'utf8')) as { version: string }
).version;
