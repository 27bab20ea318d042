import {
  CanActivate,
  ExecutionContext,
  Injectable,
  SetMetadata,
  createParamDecorator,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { DomainError } from '../common/domain-error';
import { ApiKeysService } from './api-keys.service';

const PUBLIC = 'auth:public';
/** Marks a route that needs no key (health). */
export const Public = () => SetMetadata(PUBLIC, true);

type TenantRequest = Request & { tenant?: string };

/** Every non-public route resolves the caller's tenant from the API key; a bad key is 401. */
@Injectable()
export class TenantGuard implements CanActivate {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly reflector: Reflector,
  ) {}

  canActivate(ctx: ExecutionContext): boolean {
    if (ctx.getType() !== 'http') return true;
    if (this.reflector.getAllAndOverride<boolean>(PUBLIC, [ctx.getHandler(), ctx.getClass()]))
      return true;
    const req = ctx.switchToHttp().getRequest<TenantRequest>();
    const tenant = this.keys.tenantFor(ApiKeysService.keyFromHeaders(req.headers));
    if (!tenant)
      throw new DomainError('unauthorized', 'UNAUTHORIZED', 'missing or invalid API key');
    req.tenant = tenant;
    return true;
  }
}

/** The caller's tenant id, as resolved by TenantGuard. */
export const Tenant = createParamDecorator((_: unknown, ctx: ExecutionContext): string => {
  const tenant = ctx.switchToHttp().getRequest<TenantRequest>().tenant;
  if (!tenant) throw new DomainError('unauthorized', 'UNAUTHORIZED', 'missing or invalid API key');
  return tenant;
});
