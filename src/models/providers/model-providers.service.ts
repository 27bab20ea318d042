import { Inject, Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { APP_CONFIG } from '../../config/config.module';
import { ProviderCatalog } from './provider-catalog';

/**
 * The operator's model providers, built once from the configuration: what agents may pick
 * (`list`, `listModels` for a models API; `fromHandle` / `resolve` to pin an llm_config to one).
 */
@Injectable()
export class ModelProvidersService extends ProviderCatalog {
  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    super(config.models);
  }
}
