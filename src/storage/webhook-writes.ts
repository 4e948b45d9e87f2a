import type { ChangeType } from '../domain/patch.ts';
import { TENANT_BLOCK } from '../domain/tenant.ts';
import { answer, LEDGER, LEDGER_IF, PENDING, type AdminBatch } from './admin-writes.ts';
import { nextId } from './sequences.ts';

/**
 * The writes of webhook subscriptions, exactly once, as the admin API's are: each is one D1 batch
 * whose first statement inserts its write id into the ledger, and its answer is the one that row
 * holds. The answer's body (the subscription as it stands after the write) is written into the
 * row in SQL, by the batch's last write. A batch sent again after a lost reply fails on the
 * ledger row before it changes anything and reads the answer from it: a retry never makes a
 * second subscription.
 */

/** The public form of the row `w`, as text (the order of `WebhookSchema`). */
const PUBLIC = `json_object('id', w.id, 'url', w.url, 'types', json(w.types), 'objectIds', json(w.object_ids),
  'createdAt', w.created_at, 'status', w.status, 'reason', w.reason`;
/** The feed's newest position: a new subscription starts after it. */
// The newest change of the workspace's (`?1`) tenant: the feed numbers of each tenant lie in its block.
const FIRST = `CAST(?1 AS INTEGER) / ${TENANT_BLOCK} * ${TENANT_BLOCK}`;
const NEWEST = `(SELECT coalesce(max(seq), ${FIRST}) FROM changes
  WHERE seq >= ${FIRST} AND seq < ${FIRST} + ${TENANT_BLOCK})`;
const IN_WORKSPACE = 'EXISTS (SELECT 1 FROM webhooks WHERE id = ?3 AND workspace_id = ?4)';

/**
 * Completes a pending ledger row with `status` and the public form of subscription `?2`, plus
 * `extra` members. `|| ''` makes the body plain text, not a JSON value nested in the outcome.
 */
const COMPLETE = (status: number, extra = ''): string =>
  `UPDATE writes SET outcome = json_object('a', json_object('status', ${status},
     'body', (SELECT ${PUBLIC}${extra}) FROM webhooks w WHERE w.id = ?2) || ''))
   WHERE id = ?1 AND outcome = '${PENDING}'`;

/**
 * What a create's answer shows in place of the secret: the ledger never holds it. The route
 * puts the secret back (derived again from the write id) before answering.
 */
export const HIDDEN_SECRET = ',"secret":""}';

export class WebhookWrites {
  /** `tenant`: whose subscriptions, in the block of ids that is its own. */
  constructor(
    private readonly db: D1Database,
    private readonly tenant: number,
  ) {}

  /** A new subscription, starting after the feed's newest change: `{…public, "secret":""}`. */
  create(
    writeId: string,
    input: {
      workspaceId: number;
      url: string;
      types: ChangeType[] | null;
      objectIds: number[] | null;
      secret: string;
      by: number;
    },
    now: number,
  ): AdminBatch {
    const { take, id } = nextId(this.db, 'webhooks', this.tenant);
    return {
      ledger: this.db.prepare(LEDGER).bind(writeId, PENDING),
      effects: [
        take,
        this.db
          .prepare(
            `INSERT INTO webhooks (id, workspace_id, url, types, object_ids, secret, status, reason, start_seq,
              created_at, created_by)
             VALUES (${id}, ?1, ?2, ?3, ?4, ?5, 'active', NULL, ${NEWEST}, ?6, ?7)`,
          )
          .bind(
            input.workspaceId,
            input.url,
            JSON.stringify(input.types),
            JSON.stringify(input.objectIds),
            input.secret,
            now,
            input.by,
          ),
      ],
      complete: this.db.prepare(COMPLETE(201, ", 'secret', ''").replace('?2', id)).bind(writeId),
    };
  }

  /** Sets the status (and its reason): the subscription as it now is; 404 when the workspace has none. */
  setStatus(
    writeId: string,
    id: number,
    workspaceId: number,
    status: 'active' | 'disabled',
    reason: string | null,
  ): AdminBatch {
    return {
      ledger: this.db.prepare(LEDGER_IF(IN_WORKSPACE)).bind(writeId, PENDING, id, workspaceId),
      effects: [
        this.db
          .prepare('UPDATE webhooks SET status = ?3, reason = ?4 WHERE id = ?1 AND workspace_id = ?2')
          .bind(id, workspaceId, status, reason),
      ],
      complete: this.db.prepare(COMPLETE(200)).bind(writeId, id),
    };
  }

  /** Removes one: 204; 404 when the workspace has none. */
  remove(writeId: string, id: number, workspaceId: number): AdminBatch {
    return {
      ledger: this.db.prepare(LEDGER_IF(IN_WORKSPACE)).bind(writeId, answer(204, ''), id, workspaceId),
      effects: [this.db.prepare('DELETE FROM webhooks WHERE id = ? AND workspace_id = ?').bind(id, workspaceId)],
    };
  }

  /**
   * A replay, once its object was told: nothing changes in D1, the ledger row holds the answer
   * (the subscription); 404 when the workspace no longer has it.
   */
  replayed(writeId: string, id: number, workspaceId: number): AdminBatch {
    return {
      ledger: this.db.prepare(LEDGER_IF(IN_WORKSPACE)).bind(writeId, PENDING, id, workspaceId),
      effects: [],
      complete: this.db.prepare(COMPLETE(200)).bind(writeId, id),
    };
  }
}
