import { loadConfig } from '../../src/config/app-config';
import type { InputLimits } from '../../src/core/limits';
import type { ModelAnswerBounds } from '../../src/models/model-provider';

const defaults = loadConfig({});

/** The `limits` of config/default.yaml, for unit tests of the pure validators. */
export const LIMITS: InputLimits = defaults.limits;

/** What a model endpoint's answer may hold (`models.*` of config/default.yaml), for provider tests. */
export const MODEL_ANSWER_BOUNDS: ModelAnswerBounds = defaults.models;
