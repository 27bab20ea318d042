import { Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { existsSync } from 'node:fs';
import { DomainError } from '../common/domain-error';
import { unknownAgentFileFields } from '../core/agents/agent-file-fields';
import { AppConfig } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';
import { readYamlFile, yamlFilesIn } from '../tools/yaml-files';
import { AgentsService } from './agents.service';

/**
 * Loads config/agents/*.yaml (one agent a file) into the default tenant at boot, after migrations and
 * after the tool files (ToolsService loads those in onModuleInit). A broken file stops the boot with an
 * Error naming the file, the field and the reason.
 */
@Injectable()
export class AgentFilesLoader implements OnApplicationBootstrap {
  private readonly logger = new Logger('AgentFiles');

  constructor(
    private readonly agents: AgentsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const dir = this.config.paths.agents_dir;
    if (!existsSync(dir)) this.logger.warn(`no agents folder at ${dir}: no agent files loaded`);
    const files = yamlFilesIn(dir);
    const names = new Map<string, string>();
    let changed = 0;
    for (const file of files) {
      const doc = readAgentFile(file);
      const name = (doc as { name?: unknown }).name;
      if (typeof name !== 'string' || name.trim() === '')
        throw new Error(
          `agent file ${file}: name: is required (agents in files are matched by name)`,
        );
      if (names.has(name))
        throw new Error(`agent file ${file}: name: "${name}" is also used by ${names.get(name)}`);
      names.set(name, file);
      try {
        // unknown fields (typos) are reported together with invalid values
        const done = await this.agents.upsertFromFile(doc, unknownAgentFileFields(doc));
        if (done.changed) changed++;
        if (done.sharesNameWith)
          this.logger.warn(
            `agent file ${file}: created agent ${done.agent.id} named "${name}", beside agent ${done.sharesNameWith} of the same name created over the API in tenant default (left as it is); clients that find agents by name see both`,
          );
      } catch (e) {
        if (e instanceof DomainError && Array.isArray(e.details.problems)) {
          const problems = e.details.problems as { path: string; message: string }[];
          const more = Number(e.details.more_problems ?? 0);
          throw new Error(
            `agent file ${file}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}${more ? `; and ${more} more` : ''}`,
          );
        }
        throw e;
      }
    }
    if (files.length)
      this.logger.log(`${files.length} agent file(s) in ${dir}, ${changed} created or updated`);
  }
}

function readAgentFile(file: string): Record<string, unknown> {
  const doc = readYamlFile(file, 'agent');
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new Error(`agent file ${file}: (document): must be a mapping of agent fields`);
  return doc as Record<string, unknown>;
}
