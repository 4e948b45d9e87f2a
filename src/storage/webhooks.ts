import { TENANT_BLOCK } from '../domain/tenant.ts';
import type { ChangeRow } from '../domain/feed-item.ts';
import type { ChangeType } from '../domain/patch.ts';
import type { Meter } from './meter.ts';
import { retrying } from './retry.ts';

/** A subscription as stored. `types`/`objectIds` null: no filter on it. */
export interface Webhook {
  id: number;
  workspaceId: number;
  url: string;
  types: ChangeType[] | null;
  objectIds: number[] | null;
  secret: string;
  status: 'active' | 'disabled';
  reason: string | null;
  startSeq: number;
  createdAt: number;
  createdBy: number;
}

interface WebhookRow {
  id: number;
  workspace_id: number;
  url: string;
  types: string;
  object_ids: string;
  secret: string;
  status: 'active' | 'disabled';
  reason: string | null;
  start_seq: number;
  created_at: number;
  created_by: number;
}

const toWebhook = (row: WebhookRow): Webhook => ({
  id: row.id,
  workspaceId: row.workspace_id,
  url: row.url,
  types: JSON.parse(row.types) as ChangeType[] | null,
  objectIds: JSON.parse(row.object_ids) as number[] | null,
  secret: row.secret,
  status: row.status,
  reason: row.reason,
  startSeq: row.start_seq,
  createdAt: row.created_at,
  createdBy: row.created_by,
});

/** A change as a subscription reads it: with its record's object, for the filter. */
export type FeedChange = ChangeRow & { objectId: number };

// Only while its maker (`?4`) edits the workspace: a subscription carries its maker's access, and a
// maker made a viewer, a member under a role (which may hide records and fields) or no member has
// nothing delivered until they edit it again (their position waits, within the feed's retention).
const FEED = `SELECT c.seq, c.record_id, c.version, c.type, c.at, c.by, c.data, r.object_id FROM changes c
  JOIN records r ON r.id = c.record_id
  WHERE c.seq > ?2
    AND EXISTS (SELECT 1 FROM record_workspaces rw WHERE rw.workspace_id = ?1 AND rw.record_id = c.record_id)
    AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = ?1 AND m.user_id = ?4 AND m.role = 'editor')
  ORDER BY c.seq LIMIT ?3`;
// How far the feed of the workspace's (`?1`) tenant was pruned.
const HORIZON = `SELECT coalesce((SELECT seq FROM feed_horizons
  WHERE tenant = CAST(?1 AS INTEGER) / ${TENANT_BLOCK} + 1), 0) AS seq`;

/** SQL of webhook subscriptions. Each method is one D1 round trip. */
export class Webhooks {
  constructor(
    private readonly db: D1Database,
    private readonly meter: Meter,
  ) {}

  async list(workspaceId: number): Promise<Webhook[]> {
    const { results } = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare('SELECT * FROM webhooks WHERE workspace_id = ? ORDER BY id')
          .bind(workspaceId)
          .all<WebhookRow>(),
      ),
    );
    return results.map(toWebhook);
  }

  /** The subscription `id`, when it belongs to `workspaceId` (any workspace when undefined). */
  async get(id: number, workspaceId?: number): Promise<Webhook | undefined> {
    const rows = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare('SELECT * FROM webhooks WHERE id = ?1 AND (?2 IS NULL OR workspace_id = ?2)')
          .bind(id, workspaceId ?? null)
          .all<WebhookRow>(),
      ),
    );
    const row = rows.results[0];
    return row === undefined ? undefined : toWebhook(row);
  }

  /** Sets the status (and its reason); the subscription as it now is, or undefined when there is none. */
  async setStatus(
    id: number,
    workspaceId: number | undefined,
    status: Webhook['status'],
    reason: string | null,
  ): Promise<Webhook | undefined> {
    const rows = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare(
            'UPDATE webhooks SET status = ?3, reason = ?4 WHERE id = ?1 AND (?2 IS NULL OR workspace_id = ?2) ' +
              'RETURNING *',
          )
          .bind(id, workspaceId ?? null, status, reason)
          .all<WebhookRow>(),
      ),
    );
    const row = rows.results[0];
    return row === undefined ? undefined : toWebhook(row);
  }

  /** Every active subscription, by id (the Cron Trigger's backstop wakes them all). */
  async allActive(): Promise<number[]> {
    const { results } = await retrying(() =>
      this.meter.d1(() =>
        this.db.prepare("SELECT id FROM webhooks WHERE status = 'active' ORDER BY id").all<{ id: number }>(),
      ),
    );
    return results.map((row) => row.id);
  }

  /** The active subscriptions of each of `workspaceIds` (an empty list for a workspace with none). */
  async activeIn(workspaceIds: readonly number[]): Promise<Map<number, number[]>> {
    const active = new Map<number, number[]>(workspaceIds.map((id) => [id, []]));
    if (workspaceIds.length === 0) return active;
    const { results } = await retrying(() =>
      this.meter.d1(() =>
        this.db
          .prepare(
            "SELECT id, workspace_id FROM webhooks WHERE status = 'active' " +
              'AND workspace_id IN (SELECT value FROM json_each(?)) ORDER BY id',
          )
          .bind(JSON.stringify(workspaceIds))
          .all<{ id: number; workspace_id: number }>(),
      ),
    );
    for (const row of results) active.get(row.workspace_id)?.push(row.id);
    return active;
  }

  /** Up to `limit` changes of the workspace's records after `afterSeq`, and the prune horizon. */
  async changes(
    workspaceId: number,
    afterSeq: number,
    limit: number,
    maker: number,
  ): Promise<{ changes: FeedChange[]; horizon: number }> {
    const [rows, horizon] = await retrying(() =>
      this.meter.d1(() =>
        this.db.batch<unknown>([
          this.db.prepare(FEED).bind(workspaceId, afterSeq, limit, maker),
          this.db.prepare(HORIZON).bind(workspaceId),
        ]),
      ),
    );
    const changes = (
      (rows?.results ?? []) as (Omit<FeedChange, 'recordId' | 'objectId'> & { record_id: number; object_id: number })[]
    ).map(({ record_id, object_id, ...row }) => ({ ...row, recordId: record_id, objectId: object_id }));
    return { changes, horizon: (horizon?.results[0] as { seq: number } | undefined)?.seq ?? 0 };
  }
}
