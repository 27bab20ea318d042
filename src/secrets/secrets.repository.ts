import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { Transactor } from '../database/transactor';
import { TenantQuotas } from '../quotas/tenant-quotas';
import { TenantSecretEntity } from './tenant-secret.entity';

/** Sealed secrets by tenant, owner (tenant-wide or an agent) and name. */
@Injectable()
export class SecretsRepository {
  constructor(
    @InjectRepository(TenantSecretEntity) private readonly repo: Repository<TenantSecretEntity>,
    private readonly tx: Transactor,
    private readonly quotas: TenantQuotas,
  ) {}

  listOwned(tenantId: string, owner: string): Promise<TenantSecretEntity[]> {
    return this.repo.find({ where: { tenant_id: tenantId, owner }, order: { name: 'ASC' } });
  }

  /** Rows of these owners (agents), by name. */
  listOwnedBy(tenantId: string, owners: string[]): Promise<TenantSecretEntity[]> {
    if (owners.length === 0) return Promise.resolve([]);
    return this.repo.find({
      where: { tenant_id: tenantId, owner: In(owners) },
      order: { name: 'ASC' },
    });
  }

  /** Rows of these owners (the tenant's and one agent's) with these names. */
  findNamed(tenantId: string, owners: string[], names: string[]): Promise<TenantSecretEntity[]> {
    if (names.length === 0) return Promise.resolve([]);
    return this.repo.find({ where: { tenant_id: tenantId, owner: In(owners), name: In(names) } });
  }

  /** The names of the tenant's secrets (any owner): at most its quota. */
  async namesOf(tenantId: string): Promise<Set<string>> {
    const rows = await this.repo.find({ select: { name: true }, where: { tenant_id: tenantId } });
    return new Set(rows.map((r) => r.name));
  }

  countOwned(tenantId: string, owner: string): Promise<number> {
    return this.repo.count({ where: { tenant_id: tenantId, owner } });
  }

  find(tenantId: string, owner: string, name: string): Promise<TenantSecretEntity | null> {
    return this.repo.findOne({ where: { tenant_id: tenantId, owner, name } });
  }

  /** Sets one secret; a new one must fit the tenant's quota (409 QUOTA_EXCEEDED, nothing written). */
  async put(row: TenantSecretEntity): Promise<void> {
    await this.tx.run(async (em) => {
      const key = { tenant_id: row.tenant_id, owner: row.owner, name: row.name };
      const added = (await em.existsBy(TenantSecretEntity, key)) ? 0 : 1;
      await em.upsert(TenantSecretEntity, row, ['tenant_id', 'owner', 'name']);
      await this.quotas.assertWithin(em, row.tenant_id, 'secrets', added);
    });
  }

  /** Replaces an owner's secrets with `rows` at once; what they add beyond the old ones must fit the quota. */
  async replaceOwner(tenantId: string, owner: string, rows: TenantSecretEntity[]): Promise<void> {
    await this.tx.run(async (em) => {
      const removed = await em.delete(TenantSecretEntity, { tenant_id: tenantId, owner });
      if (rows.length) await em.insert(TenantSecretEntity, rows);
      await this.quotas.assertWithin(
        em,
        tenantId,
        'secrets',
        rows.length - (removed.affected ?? 0),
      );
    });
  }

  /** Whether a row was removed. */
  async remove(tenantId: string, owner: string, name: string): Promise<boolean> {
    const r = await this.repo.delete({ tenant_id: tenantId, owner, name });
    return (r.affected ?? 0) > 0;
  }

  async removeOwner(tenantId: string, owner: string): Promise<void> {
    await this.repo.delete({ tenant_id: tenantId, owner });
  }
}
