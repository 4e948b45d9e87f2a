import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { databaseFor } from './tenancy/routes.ts';
import { tenantOfId } from './domain/tenant.ts';
import { buildStep, buildsOf } from './storage/record-index.ts';

/** After a failed chunk (D1 unreachable, say), the next try waits this long. */
const RETRY_MS = 5_000;

/**
 * One object per object definition (named by its id) builds the index of the fields newly marked
 * `indexed`, for the records written before: one chunk of records per alarm, each chunk and the
 * build's new position in one D1 transaction. Alarms never overlap, and the position lives in
 * D1, so a restart or a deploy loses at most a chunk in flight, which the next alarm builds
 * again. The object keeps only which object definition it serves.
 */
export class IndexBuildObject extends DurableObject<Env> {
  /** Builds may be due for the object `objectId`: start building them. */
  async start(objectId: number): Promise<void> {
    await this.ctx.storage.put('objectId', objectId);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  override async alarm(): Promise<void> {
    const objectId = await this.ctx.storage.get<number>('objectId');
    if (objectId === undefined) return;
    try {
      if (await this.step(objectId)) await this.ctx.storage.setAlarm(Date.now());
    } catch (error) {
      console.error(JSON.stringify({ message: 'index build step failed', objectId, error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
  }

  /** Builds one chunk of the object's first build due; false when none is due. */
  protected async step(objectId: number): Promise<boolean> {
    const db = await databaseFor(this.env, tenantOfId(objectId));
    if (db === undefined) return false;
    const [build] = await buildsOf(db, objectId);
    if (build === undefined) return false;
    await buildStep(db, objectId, build);
    return true;
  }
}
