import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { Catalog } from './storage/catalog.ts';
import { Meter } from './storage/meter.ts';
import { databaseNamed, forgetRoute } from './storage/routes.ts';
import { onPrimary } from './storage/sessions.ts';
import { TenantData } from './storage/tenant-data.ts';

/** After a failed step (D1 unreachable, say), the next try waits this long. */
const RETRY_MS = 2_000;

/**
 * One object per tenant (named by its id) does what takes longer than a request: a deleted
 * tenant's rows, import files and objects are removed a chunk per alarm. What it has done lives in
 * D1 (what rows remain), so a restart only repeats a step, which removes nothing twice. The
 * object keeps only which tenant it serves and what it is doing.
 */
export class TenantObject extends DurableObject<Env> {
  /** Removes a deleted tenant's data, in the background; the tenant is on `database`. */
  async remove(tenantId: number, database: string): Promise<void> {
    await this.ctx.storage.put('removal', { tenantId, database });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const removal = await this.ctx.storage.get<{ tenantId: number; database: string }>('removal');
    if (removal === undefined) return;
    try {
      if (await this.removeSome(removal.tenantId, removal.database)) await this.ctx.storage.setAlarm(Date.now());
      else await this.ctx.storage.deleteAll();
    } catch (error) {
      console.error(JSON.stringify({ message: 'tenant removal step failed', ...removal, error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
  }

  /** One step: what lives outside D1 first, then a chunk of rows; false once all is gone. */
  private async removeSome(tenantId: number, database: string): Promise<boolean> {
    const db = databaseNamed(this.env, database);
    if (db === undefined) return false;
    const meter = new Meter();
    const data = new TenantData(onPrimary(db, meter), meter, tenantId);
    const { files, importIds, webhookIds } = await data.outside();
    await Promise.all([
      ...files.map((file) => this.env.IMPORT_FILES.delete(file)),
      ...importIds.map((id) => this.env.IMPORTS.getByName(String(id)).forget()),
      ...webhookIds.map((id) => this.env.WEBHOOKS.getByName(String(id)).forget()),
    ]);
    if (await data.removeSome()) return true;
    await new Catalog(onPrimary(this.env.DB, meter), meter).markDeleted(tenantId);
    forgetRoute(tenantId);
    return false;
  }
}
