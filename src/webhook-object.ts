import { DurableObject } from 'cloudflare:workers';
import type { Env } from './env.ts';
import { feedItem } from './domain/feed-item.ts';
import { backoffMs, matches, shouldDisable, timingOf, urlProblem, type DeliveryTiming } from './domain/webhook.ts';
import { cursorKey, signCursor } from './http/cursor.ts';
import { postItem, type Attempt } from './push/post.ts';
import { webhookHeaders } from './push/sign.ts';
import { storedCursorKey } from './storage/cursor-key.ts';
import { Meter } from './storage/meter.ts';
import { databaseFor } from './tenancy/routes.ts';
import { tenantOfId } from './domain/tenant.ts';
import { Webhooks, type Webhook } from './storage/webhooks.ts';

/** Where a subscription stands, kept in its object's own storage. */
export interface DeliveryState {
  /** The subscription this object delivers (its name). */
  id: number;
  /** The feed position acknowledged last: everything up to it was answered 2xx (or filtered out). */
  seq: number;
  /** Failures in a row of the item after `seq`. */
  failures: number;
  /** When the current run of failures began. */
  failingSince: number | null;
  /** No attempt before this time (backing off). */
  retryAt: number;
}

/** The deliveries log keeps this many attempts, newest first. */
export const LOG_SIZE = 100;
/** Feed changes read per round trip. */
const PAGE = 100;
/** Even with no wake-up, an active subscription looks at the feed this often. */
export const CATCH_UP_MS = 30_000;
/** One alarm delivers at most this long, then hands over to the next alarm. */
const RUN_MS = 20_000;

/**
 * One object per subscription delivers its workspace's feed to its URL: in feed order, one item
 * in flight, the cursor moved on only after a 2xx. Every run is an alarm, so runs never overlap
 * and a run cut short (a restart, a deploy) is taken up again by the next alarm from the stored
 * cursor: at least once, never a gap. A commit's wake-up only brings the next alarm forward;
 * without it, an alarm every CATCH_UP_MS finds the change anyway.
 */
export class WebhookObject extends DurableObject<Env> {
  /** A wake-up arrived since the current run read the feed: run again at once. */
  private woken = false;
  /** Bumped by replay and resume: a run that started before them stores nothing more. */
  private epoch = 0;

  /** The subscriptions of the tenant whose subscription `id` is, on its database (none once it is gone). */
  private async webhooksOf(id: number): Promise<Webhooks | undefined> {
    const db = await databaseFor(this.env, tenantOfId(id));
    return db === undefined ? undefined : new Webhooks(db, new Meter());
  }

  private get timing(): DeliveryTiming {
    return timingOf(this.env.WEBHOOK_RETRY_BASE_MS, this.env.WEBHOOK_DISABLE_AFTER_MS);
  }

  /** The stored state; else, given the subscription's id, a fresh one starting where the subscription does. */
  private async state(id?: number): Promise<DeliveryState | undefined> {
    const stored = await this.ctx.storage.get<DeliveryState>('state');
    if (stored !== undefined || id === undefined) return stored;
    const webhook = await (await this.webhooksOf(id))?.get(id);
    if (webhook === undefined) return undefined;
    const fresh: DeliveryState = { id, seq: webhook.startSeq, failures: 0, failingSince: null, retryAt: 0 };
    await this.ctx.storage.put('state', fresh);
    return fresh;
  }

  /** A change may be waiting: deliver soon, unless backing off from a failure. */
  async wake(id: number): Promise<void> {
    this.woken = true;
    const state = await this.state(id);
    if (state === undefined) return;
    const now = Date.now();
    const due = Math.max(now, state.retryAt);
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > due) await this.ctx.storage.setAlarm(due);
  }

  /** Delivers again everything after feed position `seq`, at once. */
  async replay(id: number, seq: number): Promise<void> {
    this.epoch++;
    await this.ctx.storage.put('state', { id, seq, failures: 0, failingSince: null, retryAt: 0 } as DeliveryState);
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** Re-enabled: retries the item it stopped at, at once, with a fresh count of failures. */
  async resume(id: number): Promise<void> {
    this.epoch++;
    const state = await this.state(id);
    if (state === undefined) return;
    await this.ctx.storage.put('state', { ...state, failures: 0, failingSince: null, retryAt: 0 });
    await this.ctx.storage.setAlarm(Date.now());
  }

  /** The subscription was deleted: nothing of it stays. */
  async forget(): Promise<void> {
    this.epoch++;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** The last LOG_SIZE attempts, newest first. */
  async deliveries(): Promise<Attempt[]> {
    return (await this.ctx.storage.get<Attempt[]>('log')) ?? [];
  }

  override async alarm(): Promise<void> {
    this.woken = false;
    const state = await this.state();
    if (state === undefined) return;
    try {
      const epoch = this.epoch;
      const next = await this.run(state, epoch);
      // A replay or resume during the run set its own alarm; leave it be.
      if (epoch !== this.epoch) return;
      // A wake-up during the run may have found no alarm to bring forward: run again at once.
      if (next !== undefined) await this.ctx.storage.setAlarm(this.woken && !next.backoff ? Date.now() : next.at);
    } catch (error) {
      // D1 unreachable, say: the cursor is where it was; try again shortly.
      console.error(JSON.stringify({ message: 'webhook run failed', id: state.id, error: String(error) }));
      await this.ctx.storage.setAlarm(Date.now() + this.timing.retryBaseMs);
    }
  }

  /**
   * Delivers what is due. Returns when the next alarm should come (after a failure: `backoff`),
   * or undefined for none.
   */
  private async run(state: DeliveryState, epoch: number): Promise<{ at: number; backoff?: true } | undefined> {
    const webhooks = await this.webhooksOf(state.id);
    const webhook = await webhooks?.get(state.id);
    if (webhooks === undefined || webhook === undefined) {
      await this.ctx.storage.deleteAll();
      return undefined;
    }
    if (webhook.status !== 'active') return undefined;
    const timing = this.timing;
    const started = Date.now();
    const secret = await cursorKey(this.env.CURSOR_SECRET, () => storedCursorKey(this.env.DB, new Meter()));
    const scope = `changes/${webhook.workspaceId}`;
    let current = state;
    const save = async (next: DeliveryState): Promise<boolean> => {
      if (epoch !== this.epoch) return false;
      current = next;
      await this.ctx.storage.put('state', next);
      return true;
    };
    for (;;) {
      const { changes, horizon } = await webhooks.changes(webhook.workspaceId, current.seq, PAGE, webhook.createdBy);
      // Changes past their retention were pruned before they could be delivered: nothing to wait for.
      if (horizon > current.seq && !(await save({ ...current, seq: horizon }))) return undefined;
      if (changes.length === 0) break;
      for (const change of changes) {
        if (!matches(webhook, change)) {
          if (!(await save({ ...current, seq: change.seq }))) return undefined;
          continue;
        }
        const cursor = await signCursor(secret, change.seq, scope);
        const attempt = await this.deliver(webhook, cursor, JSON.stringify(feedItem(change, cursor)));
        if (epoch !== this.epoch) return undefined;
        await this.log(attempt);
        if (attempt.error === null) {
          if (!(await save({ ...current, seq: change.seq, failures: 0, failingSince: null, retryAt: 0 })))
            return undefined;
          continue;
        }
        const now = Date.now();
        const failingSince = current.failingSince ?? attempt.at;
        const failures = current.failures + 1;
        if (shouldDisable(failingSince, now, timing)) {
          await save({ ...current, failures, failingSince, retryAt: 0 });
          const since = new Date(failingSince).toISOString();
          await webhooks.setStatus(webhook.id, undefined, 'disabled', `failing since ${since}: ${attempt.error}`);
          return undefined;
        }
        const retryAt = now + backoffMs(failures, timing);
        await save({ ...current, failures, failingSince, retryAt });
        return { at: retryAt, backoff: true };
      }
      if (Date.now() - started > RUN_MS) return { at: Date.now() };
    }
    return { at: Date.now() + CATCH_UP_MS };
  }

  private async deliver(webhook: Webhook, cursor: string, body: string): Promise<Attempt> {
    // A subscription made before its URL's host was refused is never called: it fails as unreachable.
    const refused = urlProblem(webhook.url, this.env.WEBHOOK_ALLOW_HTTP);
    if (refused !== undefined)
      return { cursor, at: Date.now(), status: null, durationMs: 0, error: `url not allowed: ${refused}` };
    const headers = await webhookHeaders(webhook.secret, cursor, Math.floor(Date.now() / 1000), body);
    return postItem(webhook.url, headers, body, cursor);
  }

  private async log(attempt: Attempt): Promise<void> {
    const log = (await this.ctx.storage.get<Attempt[]>('log')) ?? [];
    await this.ctx.storage.put('log', [attempt, ...log].slice(0, LOG_SIZE));
  }
}
