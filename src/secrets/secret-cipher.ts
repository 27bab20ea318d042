import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { conflict } from '../common/domain-error';

const VERSION = 'v1';

/**
 * AES-256-GCM for secrets at rest. The associated data binds a ciphertext to its owner and name, so a
 * row copied to another tenant (or renamed) no longer decrypts. Format `v1:<iv>:<tag>:<ciphertext>`, base64.
 */
export class SecretCipher {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('the secrets key must be 32 bytes');
  }

  encrypt(plaintext: string, aad: string): string {
    const iv = randomBytes(12);
    const c = createCipheriv('aes-256-gcm', this.key, iv);
    c.setAAD(Buffer.from(aad, 'utf8'));
    const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
    return [VERSION, iv, c.getAuthTag(), ct]
      .map((p) => (typeof p === 'string' ? p : p.toString('base64')))
      .join(':');
  }

  /** Throws when the key, the associated data or the ciphertext does not match. */
  decrypt(sealed: string, aad: string): string {
    const [v, iv, tag, ct] = sealed.split(':');
    if (v !== VERSION || ct === undefined) throw new Error('unknown secret format');
    const d = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64'));
    d.setAAD(Buffer.from(aad, 'utf8'));
    d.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([d.update(Buffer.from(ct, 'base64')), d.final()]).toString('utf8');
  }
}

/** The one cipher of the app (`SecretCipher`, or null when `secrets.encryption_key` is unset). */
export const SECRET_CIPHER = Symbol('SECRET_CIPHER');

/** The cipher, or 409 SECRETS_NOT_CONFIGURED: nothing secret is stored in the clear. */
export function requireCipher(cipher: SecretCipher | null, what = 'secrets'): SecretCipher {
  if (!cipher)
    throw conflict(
      'SECRETS_NOT_CONFIGURED',
      `${what} cannot be stored: the operator has not set secrets.encryption_key (SECRETS_ENCRYPTION_KEY)`,
    );
  return cipher;
}
