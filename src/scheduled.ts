import type { Env } from './env.ts';
import { IdempotencyStore } from './storage/idempotency.ts';
import { Lists } from './storage/lists.ts';
import { Meter } from './storage/meter.ts';

/**
 * The Cron Trigger's work: each step removes what the contract no longer asks us to keep.
 * Steps are independent; one failing does not stop the others, and the next run catches up.
 */
export async function runScheduled(env: Env, now: number): Promise<void> {
  const meter = new Meter();
  const steps: [string, () => Promise<number>][] = [
    ['idempotency keys older than 24 h', () => new IdempotencyStore(env.DB, meter).prune(now)],
    ['changes older than 7 days', () => new Lists(env.DB, meter).pruneChanges(now)],
  ];
  for (const [what, step] of steps) {
    try {
      const removed = await step();
      console.log(JSON.stringify({ scheduled: what, removed }));
    } catch (error) {
      console.error(JSON.stringify({ scheduled: what, error: error instanceof Error ? error.message : String(error) }));
    }
  }
}
