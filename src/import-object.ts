import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { importChunk } from './write/import-chunk.ts';
import { wakeWorkspaces } from './push/wake.ts';

/** After a failed chunk (D1 or R2 unreachable, say), the next try waits this long. */
const RETRY_MS = 2_000;

/**
 * One object per import (named by its id) applies its file a chunk per alarm. The position lives
 * in D1 and moves in each chunk's transaction, guarded by where the chunk began: a restart, a lost
 * reply or a twin of this object applies no row twice, and the next alarm goes on from D1's
 * position. The object keeps only which import it serves.
 */
export class ImportObject extends DurableObject<Env> {
  /** Import `id` is queued: start applying it. */
  async start(id: number): Promise<void> {
    await this.ctx.storage.put('importId', id);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now());
  }

  /** Its import is gone (its tenant was deleted): nothing of it stays. */
  async forget(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  override async alarm(): Promise<void> {
    const id = await this.ctx.storage.get<number>('importId');
    if (id === undefined) return;
    try {
      const step = await this.step(id);
      if (step.workspaceId !== undefined) this.ctx.waitUntil(wakeWorkspaces(this.env, [step.workspaceId]));
      if (step.more) await this.ctx.storage.setAlarm(Date.now());
    } catch (error) {
      console.error(JSON.stringify({ message: 'import chunk failed', id, error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + RETRY_MS);
    }
  }

  /** One chunk, as an alarm runs it. */
  protected step(id: number): Promise<{ more: boolean; workspaceId?: number }> {
    return importChunk(this.env, id);
  }
}
