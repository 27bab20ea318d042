import { Inject, Injectable, Logger } from '@nestjs/common';
import { timingSafeEqual } from 'node:crypto';
import { AppConfig, DEFAULT_TENANT } from '../config/app-config';
import { APP_CONFIG } from '../config/config.module';

/** Maps API keys to tenants. With no keys configured the server is open, as one default tenant. */
@Injectable()
export class ApiKeysService {
  private readonly keys: { key: Buffer; tenant: string; index: number }[];

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.keys = config.auth.api_keys.map((k, index) => ({
      key: Buffer.from(k.key),
      tenant: k.tenant,
      index,
    }));
    if (this.keys.length === 0) {
      new Logger('Auth').warn(
        `no API keys configured: the server is open, as tenant "${DEFAULT_TENANT}"`,
      );
    }
  }

  get open(): boolean {
    return this.keys.length === 0;
  }

  /** The tenant for a presented key, or null. In open mode every caller is the default tenant. */
  tenantFor(presented: string | undefined | null): string | null {
    return this.principalFor(presented)?.tenant ?? null;
  }

  /**
   * The tenant and a stable name of the configured key that matched (`key#<n>`; open mode: `open`), or
   * null. Per-key limits count under that name, so a caller cannot mint new buckets by varying the key.
   */
  principalFor(presented: string | undefined | null): { tenant: string; key: string } | null {
    if (this.open) return { tenant: DEFAULT_TENANT, key: 'open' };
    if (!presented) return null;
    const p = Buffer.from(presented);
    for (const k of this.keys)
      if (k.key.length === p.length && timingSafeEqual(k.key, p))
        return { tenant: k.tenant, key: `key#${k.index}` };
    return null;
  }

  /** Reads `Authorization: Bearer KEY` (also a bare key, and Letta's `X-BARE-PASSWORD: password KEY`). */
  static keyFromHeaders(headers: Record<string, string | string[] | undefined>): string | null {
    const auth = headers['authorization'];
    const value = Array.isArray(auth) ? auth[0] : auth;
    if (value) {
      const m = /^Bearer\s+(.+)$/i.exec(value.trim());
      return m ? m[1].trim() : value.trim();
    }
    const bare = headers['x-bare-password'];
    const b = Array.isArray(bare) ? bare[0] : bare;
    if (b) return b.replace(/^password\s+/i, '').trim();
    return null;
  }
}
