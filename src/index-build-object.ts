import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { databaseFor } from './tenancy/routes.ts';
import { tenantOfId } from './domain/tenant.ts';
import { wakeWorkspaces } from './push/wake.ts';
import { buildStep, buildsOf, FORMULAS_BUILD, ROLLUPS_BUILD, rollupStep } from './storage/record-index.ts';
import { formulaStep } from './write/formula-build.ts';

/** After a failed chunk (D1 unreachable, say), the next try waits this long. */
const RETRY_MS = 5_000;

/**
 * One object per object definition (named by its id) builds the index of the fields newly marked
 * `indexed`, and computes new or changed formulas and rollups, for the records written before:
 * one chunk of records per alarm, each chunk and the build's new position in one D1 transaction.
 * Alarms never overlap, and the position lives in D1, so a restart or a deploy loses at most a
 * chunk in flight, which the next alarm builds again. The object keeps only which object definition it serves.
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
      const next = await this.step(objectId);
      if (next !== undefined) await this.ctx.storage.setAlarm(next);
    } catch (error) {
      console.error(JSON.stringify({ message: 'index build step failed', objectId, error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
  }

  /**
   * Runs one chunk of the object's formula computation, if one is due (the index follows formula
   * values, so they go first), and while it waits, one chunk of its rollups' computation or else of
   * an index build: when the next chunk is due, undefined when nothing is.
   */
  protected async step(objectId: number): Promise<number | undefined> {
    const db = await databaseFor(this.env, tenantOfId(objectId));
    if (db === undefined) return undefined;
    const builds = await buildsOf(db, objectId);
    let next: number | undefined;
    if (builds.some((build) => build.field === FORMULAS_BUILD)) {
      const step = await formulaStep(db, objectId);
      if (step.workspaceIds.length > 0) this.ctx.waitUntil(wakeWorkspaces(this.env, step.workspaceIds));
      next = step.next;
    }
    if (next !== undefined && next <= Date.now()) return next;
    // Rollups next: a field that took a rollup's name is indexed once the rollup's rows are gone.
    const rollups = builds.find((build) => build.field === ROLLUPS_BUILD);
    if (rollups !== undefined) {
      await rollupStep(db, objectId, rollups);
      return Date.now();
    }
    const index = builds.find((build) => build.field !== FORMULAS_BUILD);
    if (index === undefined) return next;
    await buildStep(db, objectId, index);
    return Date.now();
  }
}
