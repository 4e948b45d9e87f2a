import type { Context } from '../context.ts';
import { coalesced } from './coalesce.ts';
import type { Env } from '../env.ts';
import { answeredWorkspaces } from '../http/respond.ts';
import { Meter } from '../storage/meter.ts';
import { Webhooks } from '../storage/webhooks.ts';
import { databaseFor } from '../tenancy/routes.ts';
import { tenantOfId } from '../domain/tenant.ts';

/**
 * How long an isolate trusts what it read of a workspace's active subscriptions. Only wake-ups
 * depend on it: a subscription made or resumed elsewhere in the meantime is still found by its
 * own catch-up alarm (every 30 s), so staleness costs latency for a few seconds, never a change.
 */
export const ACTIVE_TTL_MS = 10_000;
const known = new Map<number, { ids: number[]; until: number }>();

/** Forgets what this isolate knows of a workspace's subscriptions (after it changed them). */
export function forgetSubscriptions(workspaceId: number): void {
  known.delete(workspaceId);
}

/** The active subscriptions of the workspaces: from memory when fresh, else one D1 read for the rest. */
async function activeIn(db: D1Database, workspaceIds: readonly number[], now: number): Promise<number[]> {
  const missing = workspaceIds.filter((id) => (known.get(id)?.until ?? 0) <= now);
  if (missing.length > 0) {
    const read = await new Webhooks(db, new Meter()).activeIn(missing);
    for (const [id, ids] of read) known.set(id, { ids, until: now + ACTIVE_TTL_MS });
    if (known.size > 10_000) known.clear();
  }
  return [...new Set(workspaceIds.flatMap((id) => known.get(id)?.ids ?? []))];
}

/**
 * The wake-ups of a namespace's objects, coalesced per object: while one is on its way, the writes
 * that ask for it meanwhile share the one sent when it ends. A failure is logged; it ends nothing.
 */
const wakers = new WeakMap<object, (id: number) => Promise<void>>();

function wakerOf(namespace: Env['LIVE'] | Env['WEBHOOKS'], what: string): (id: number) => Promise<void> {
  let wake = wakers.get(namespace);
  if (wake === undefined) {
    const send = async (id: number) => {
      try {
        await namespace.getByName(String(id)).wake(id);
      } catch (error) {
        console.error(JSON.stringify({ message: `${what} wake-up failed`, id, error: String(error) }));
      }
    };
    wakers.set(namespace, (wake = coalesced(send)));
  }
  return wake;
}

/**
 * After a write's answer has left, wakes the live streams and active webhook subscriptions of the workspaces its
 * records are shared with (none for a replay: it wrote nothing). Best effort, off the answer's
 * path and cost (its own meter): a lost wake-up only delays delivery until the subscription's
 * next catch-up alarm.
 */
export function wakeAfterWrite(response: Response, context: Context): void {
  const workspaceIds = answeredWorkspaces.get(response);
  if (response.status < 200 || response.status >= 300 || workspaceIds === undefined || workspaceIds.length === 0)
    return;
  context.waitUntil(wakeLive(context.env, workspaceIds));
  context.waitUntil(
    (async () => {
      const ids = await activeIn(context.db, workspaceIds, Date.now());
      await Promise.all(ids.map(wakerOf(context.env.WEBHOOKS, 'webhook')));
    })().catch((error: unknown) =>
      console.error(
        JSON.stringify({ message: 'webhook wake-up failed', requestId: context.requestId, error: String(error) }),
      ),
    ),
  );
}

/**
 * Wakes the live streams of the workspaces (an object without streams answers at once). Best
 * effort: a lost wake-up waits for the streams' next check, within a second.
 */
async function wakeLive(env: Env, workspaceIds: readonly number[]): Promise<void> {
  try {
    await Promise.all(workspaceIds.map(wakerOf(env.LIVE, 'live')));
  } catch (error) {
    console.error(JSON.stringify({ message: 'live wake-up failed', workspaceIds, error: String(error) }));
  }
}

/**
 * Wakes the live streams and active subscriptions of these workspaces after records of theirs
 * changed outside a request (an import's chunk). Best effort, as after a request: a lost wake-up only waits for the
 * subscription's catch-up alarm.
 */
export async function wakeWorkspaces(env: Env, workspaceIds: readonly number[]): Promise<void> {
  await wakeLive(env, workspaceIds);
  try {
    const [first] = workspaceIds;
    const db = first === undefined ? undefined : await databaseFor(env, tenantOfId(first));
    if (db === undefined) return;
    const ids = await activeIn(db, workspaceIds, Date.now());
    await Promise.all(ids.map(wakerOf(env.WEBHOOKS, 'webhook')));
  } catch (error) {
    console.error(JSON.stringify({ message: 'webhook wake-up failed', workspaceIds, error: String(error) }));
  }
}
