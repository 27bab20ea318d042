/**
 * The server of `npm run bench:http`: the same Nest app shape as the product's message route (a global guard
 * reading the API key, a JSON body, a controller answering a Letta-sized response of one 4-step conversation)
 * on the adapter named by HTTP_ADAPTER (`express`, the product's, or `fastify`). No database, no model: only
 * what the HTTP layer and Nest cost per request.
 */
import 'reflect-metadata';
import {
  Body,
  CanActivate,
  Controller,
  ExecutionContext,
  Injectable,
  Module,
  Param,
  Post,
  UnauthorizedException,
} from '@nestjs/common';
import { APP_GUARD, NestFactory } from '@nestjs/core';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { serveBench } from '../support/server-process';

const KEY = 'Bearer bench-key';

@Injectable()
class KeyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const req = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>();
    if (req.headers.authorization !== KEY) throw new UnauthorizedException();
    return true;
  }
}

/** What the product answers for one conversation: 3 send_message calls and an answer, 4 steps. */
function conversation(agentId: string, text: string) {
  const now = new Date().toISOString();
  const messages = [];
  for (let i = 0; i < 4; i++) {
    messages.push({
      id: `message-${agentId}-${i}`,
      date: now,
      message_type: 'assistant_message',
      content: i < 3 ? `still looking (${i + 1}/3) for ${text}` : 'Here is your answer.',
      run_id: `run-${agentId}`,
      step_id: `step-${agentId}-${i}`,
      otid: null,
      sender_id: null,
      is_err: null,
      seq_id: i,
      name: null,
    });
  }
  return {
    messages,
    stop_reason: { message_type: 'stop_reason', stop_reason: 'end_turn' },
    usage: {
      message_type: 'usage_statistics',
      completion_tokens: 48,
      prompt_tokens: 1024,
      total_tokens: 1072,
      step_count: 4,
      run_ids: [`run-${agentId}`],
    },
  };
}

@Controller('v1/agents')
class MessagesController {
  @Post(':id/messages')
  send(@Param('id') id: string, @Body() body: { messages?: { content?: string }[] }) {
    return conversation(id, body.messages?.[0]?.content ?? '');
  }
}

@Module({
  controllers: [MessagesController],
  providers: [{ provide: APP_GUARD, useClass: KeyGuard }],
})
class BenchModule {}

serveBench(async () => {
  const adapter = process.env.HTTP_ADAPTER ?? 'express';
  const app =
    adapter === 'fastify'
      ? await NestFactory.create(BenchModule, new FastifyAdapter({ bodyLimit: 1_048_576 }), {
          logger: false,
        })
      : await NestFactory.create(BenchModule, { logger: false, bodyParser: true });
  await app.listen(0, '127.0.0.1');
  const server = app.getHttpServer() as Server;
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    seedHistory: () => Promise.resolve(),
    close: () => app.close(),
  };
});
