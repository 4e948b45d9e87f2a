import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { failMove, moveStep } from './tenancy/move-steps.ts';
import { Catalog } from './tenancy/catalog.ts';
import { Meter } from './storage/meter.ts';
import { databaseNamed, forgetRoute } from './tenancy/routes.ts';
import { onPrimary } from './storage/sessions.ts';
import { TenantData } from './tenancy/tenant-data.ts';
import { removeSomeFiles } from './storage/file-bytes.ts';
import { tenantFilesPrefix } from './domain/files.ts';

/** After a failed step (D1 unreachable, say), the next try waits this long. */
const RETRY_MS = 2_000;
/** A move whose step failed this many times in a row is given up (before its switch). */
const MOVE_ATTEMPTS = 8;

/**
 * One object per tenant (named by its id) does what takes longer than a request: a deleted
 * tenant's rows, import files and objects are removed a chunk per alarm, and a move runs its steps
 * (src/tenancy/move-steps.ts). What it has done lives in D1 (what rows remain, where the move stands), so a
 * restart only repeats a step, which changes nothing twice. The object keeps only what it is doing.
 */
export class TenantObject extends DurableObject<Env> {
  /** Removes a deleted tenant's data, in the background; the tenant is on `database`. */
  async remove(tenantId: number, database: string): Promise<void> {
    await this.ctx.storage.put('removal', { tenantId, database });
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  /** Runs (or wakes) the move `moveId` of this tenant, on alarms. A wake never moves an alarm set already. */
  async move(moveId: number): Promise<void> {
    await this.ctx.storage.put('move', moveId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const moveId = await this.ctx.storage.get<number>('move');
    if (moveId !== undefined) return this.moveSome(moveId);
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

  /** One step of a move; one that keeps failing ends the move as failed (unless it has switched). */
  private async moveSome(moveId: number): Promise<void> {
    try {
      const next = await moveStep(this.env, moveId);
      await this.ctx.storage.delete('failures');
      if (next !== undefined) await this.ctx.storage.setAlarm(Date.now() + next.ms);
      else {
        await this.ctx.storage.delete('move');
        // The tenant was deleted as its move ended: its removal goes on now.
        if ((await this.ctx.storage.get('removal')) !== undefined) await this.ctx.storage.setAlarm(Date.now());
      }
    } catch (error) {
      const failures = ((await this.ctx.storage.get<number>('failures')) ?? 0) + 1;
      console.error(JSON.stringify({ message: 'tenant move step failed', moveId, failures, error: String(error) }));
      const failure = error instanceof Error ? error.message.slice(0, 500) : 'unknown';
      const failed = failures >= MOVE_ATTEMPTS && (await failMove(this.env.DB, moveId, failure, Date.now()));
      await this.ctx.storage.put('failures', failed ? 0 : failures);
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS * Math.min(failures, 5));
    }
  }

  /** One step: what lives outside D1 first, then a chunk of rows; false once all is gone. */
  private async removeSome(tenantId: number, database: string): Promise<boolean> {
    const db = databaseNamed(this.env, database);
    if (db === undefined) return false;
    const meter = new Meter();
    const data = new TenantData(onPrimary(db, meter), meter, tenantId);
    const { files, importIds, webhookIds } = await data.outside();
    // A tenant's files are one prefix in R2, whatever database its rows are on.
    if (await removeSomeFiles(this.env.FILES, tenantFilesPrefix(tenantId))) return true;
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
