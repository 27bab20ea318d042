import { MigrationInterface, QueryRunner, TableColumn, TableColumnOptions } from 'typeorm';
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
      await moveSecret(q, key, 'secret', { name: 'secret_sealed', type: 'text' }, 'encrypt');
    }

    async down(q: QueryRunner): Promise<void> {
      await moveSecret(
        q,
        key,
        'secret_sealed',
        { name: 'secret', type: 'varchar', length: '300' },
        'decrypt',
      );
    }
  };
}

/** Every webhook's secret from column `from` into the new column `to`, converted; `from` is dropped. */
async function moveSecret(
  q: QueryRunner,
  key: Buffer | null,
  from: string,
  to: TableColumnOptions,
  what: 'encrypt' | 'decrypt',
): Promise<void> {
  const rows = (await q.query(`SELECT id, tenant_id, ${from} AS value FROM ${table(q)}`)) as {
    id: string;
    tenant_id: string;
    value: string;
  }[];
  const cipher = cipherFor(key, rows.length, what);
  await q.addColumn('webhooks', new TableColumn({ ...to, isNullable: true }));
  for (const r of rows) {
    const aad = webhookSecretAad(r.tenant_id, r.id);
    const value =
      what === 'encrypt' ? cipher!.encrypt(r.value, aad) : cipher!.decrypt(r.value, aad);
    await setColumn(q, to.name, r.id, value);
  }
  await q.dropColumn('webhooks', from);
  await q.changeColumn('webhooks', to.name, new TableColumn(to));
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
