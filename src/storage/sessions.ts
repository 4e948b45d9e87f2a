import { latestBookmark } from '../http/bookmark.ts';
import type { Meter } from './meter.ts';

/**
 * What storage asks of D1: a database or one of its sessions. Reads take a session of the
 * request (`withSession`), which D1 may serve from a read replica near the Worker; writes take
 * `onPrimary`.
 */
export type D1 = Pick<D1Database, 'prepare' | 'batch'>;

/**
 * `db` with every statement and batch sent to the primary: each runs in a session of its own
 * started `first-primary`, so none is ever served by a replica (a version guard, an idempotency
 * look-up, a write). Each session's bookmark goes to `meter`, so a write's answer can carry the
 * bookmark of its commit.
 */
export function onPrimary(db: D1Database, meter: Meter): D1 {
  const session = (): D1DatabaseSession => meter.track(db.withSession('first-primary'));
  return {
    prepare: (sql) => session().prepare(sql),
    batch: <T>(statements: D1PreparedStatement[]) => session().batch<T>(statements),
  };
}

/** The newest bookmark of a revocation (a key, a user, a membership, a role) made in this isolate. */
let revokedAt: string | undefined;

/**
 * Reads in this isolate start no earlier than its last revocation, so a replica that has not
 * applied it yet cannot undo it here: a revoked key is refused at once in the isolate that
 * revoked it. Elsewhere a revocation takes the isolates' memory time plus the replica's lag.
 */
export const revocationFloor = (): string | undefined => revokedAt;

export function revokedHere(bookmark: string | undefined): void {
  revokedAt = latestBookmark(revokedAt, bookmark);
}
