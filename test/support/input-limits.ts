import { loadConfig } from '../../src/config/app-config';
import type { InputLimits } from '../../src/core/limits';

/** The `limits` of config/default.yaml, for unit tests of the pure validators. */
export const LIMITS: InputLimits = loadConfig({}).limits;
