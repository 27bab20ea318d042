import { MigrationInterface, QueryRunner, TableColumn } from 'typeorm';
import { SecretCipher } from '../../secrets/secret-cipher';
import { webhookSecretAad } from '../../webhooks/webhook.entities';
import { sqlTable } from '../sql-names';

/**
 * Webhook signing secrets sealed at rest (AES-256-GCM under `secrets.encryption_key`, as tenant secrets):
 * `webhooks.secret` (clear) becomes `webhooks.secret_sealed`. It needs the key, so it is built with it; with
 * webhooks stored and no key it stops the boot rather than keep or drop their secrets.
 */
export function sealWebhookSecrets(key: Buffer | null): Function {
  return class SealWebhookSecrets1764930000000 implements MigrationInterface {
    name = 'SealWebhookSecrets1764930000000';

    async up(q: QueryRunner): Promise<void> {
      const rows = (await q.query(`SELECT id, tenant_id, secret FROM ${table(q)}`)) as {
        id: string;
        tenant_id: string;
        secret: string;
      }[];
      const cipher = cipherFor(key, rows.length, 'encrypt');
      await q.addColumn(
        'webhooks',
        new TableColumn({ name: 'secret_sealed', type: 'text', isNullable: true }),
      );
      for (const r of rows)
        await setColumn(
          q,
          'secret_sealed',
          r.id,
          cipher!.encrypt(r.secret, webhookSecretAad(r.tenant_id, r.id)),
        );
      await q.dropColumn('webhooks', 'secret');
      await q.changeColumn(
        'webhooks',
        'secret_sealed',
        new TableColumn({ name: 'secret_sealed', type: 'text' }),
      );
    }

    async down(q: QueryRunner): Promise<void> {
      const rows = (await q.query(`SELECT id, tenant_id, secret_sealed FROM ${table(q)}`)) as {
        id: string;
        tenant_id: string;
        secret_sealed: string;
      }[];
      const cipher = cipherFor(key, rows.length, 'decrypt');
      await q.addColumn(
        'webhooks',
        new TableColumn({ name: 'secret', type: 'varchar', length: '300', isNullable: true }),
      );
      for (const r of rows)
        await setColumn(
          q,
          'secret',
          r.id,
          cipher!.decrypt(r.secret_sealed, webhookSecretAad(r.tenant_id, r.id)),
        );
      await q.dropColumn('webhooks', 'secret_sealed');
      await q.changeColumn(
        'webhooks',
        'secret',
        new TableColumn({ name: 'secret', type: 'varchar', length: '300' }),
      );
    }
  };
}

const table = (q: QueryRunner) =>
  sqlTable((q.connection.options as { schema?: string }).schema, 'webhooks');

function cipherFor(key: Buffer | null, rows: number, what: string): SecretCipher | null {
  if (key) return new SecretCipher(key);
  if (rows > 0)
    throw new Error(
      `${rows} webhook signing secret(s) to ${what}: set secrets.encryption_key (SECRETS_ENCRYPTION_KEY) and start again`,
    );
  return null;
}

async function setColumn(q: QueryRunner, column: string, id: string, value: string): Promise<void> {
  const [v, i] = q.connection.options.type === 'postgres' ? ['$1', '$2'] : ['?', '?'];
  await q.query(`UPDATE ${table(q)} SET ${column} = ${v} WHERE id = ${i}`, [value, id]);
}
