/**
 * The geo simulation's read replica near the Worker (GEO_REPLICA_LAG_MS): a second local D1
 * database (the REPLICA binding, migrated alike) that receives every write committed on the
 * primary, in commit order, once GEO_REPLICA_LAG_MS have passed since it committed. So a read it serves is
 * really stale, as a lagging replica's would be.
 *
 * Routing, as D1's Sessions API promises it: a session started `first-unconstrained` reads the
 * replica; one started at a bookmark (or that has reached one) reads the replica once the
 * replica holds every write up to that bookmark. When it does not yet, the read waits for the
 * replica if that is sooner than a round trip to the primary, else reads the primary: either
 * way it sees its bookmark, and it never pays more than one long-haul round trip. A session
 * started `first-primary` (the checks of a write) reads the primary.
 *
 * A session's bookmark stays in the primary's terms: after a replica read it is the bookmark of
 * the last write the replica applied, so a client that sends it back asks for nothing newer
 * than what it saw.
 */
import { latestBookmark } from '../../src/http/bookmark.ts';

export interface Sql {
  sql: string;
  params: unknown[];
}

interface Pending {
  statements: readonly Sql[];
  bookmark: string | null;
  /** When the replica applies it (commit time + lag). */
  due: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const isRead = (sql: string): boolean => /^\s*SELECT\b/i.test(sql);

/**
 * Writes are applied by the reads that need them, in the reading request (the Workers runtime
 * runs no timer of a request that has answered): before a read, every write whose lag has
 * passed is applied, oldest first, in one batch.
 */
export class Replica {
  private readonly queue: Pending[] = [];
  private readonly applying = new Set<Pending>();
  /** The primary's bookmark of the last write applied here. */
  position: string | undefined;

  constructor(
    private readonly db: D1Database,
    private readonly lagMs: number,
    /** A round trip to the primary, which a read behind the replica may take instead of waiting. */
    private readonly primaryTripMs: number,
  ) {}

  /** A write committed on the primary at `bookmark`: applied here once the lag has passed, in order. */
  wrote(statements: readonly Sql[], bookmark: string | null): void {
    if (statements.every((s) => isRead(s.sql))) return;
    this.queue.push({ statements, bookmark, due: Date.now() + this.lagMs });
  }

  /** Applies every write whose lag has passed. */
  private async catchUp(): Promise<void> {
    const now = Date.now();
    let count = 0;
    while (count < this.queue.length && (this.queue[count] as Pending).due <= now) count++;
    if (count === 0) return;
    const taken = this.queue.splice(0, count);
    for (const entry of taken) this.applying.add(entry);
    try {
      await this.db.batch(
        taken.flatMap((entry) => entry.statements.map((s) => this.db.prepare(s.sql).bind(...s.params))),
      );
    } catch (error) {
      console.error('replica: writes did not apply', error);
    } finally {
      for (const entry of taken) {
        this.applying.delete(entry);
        this.position = latestBookmark(this.position, entry.bookmark);
      }
    }
  }

  /** Writes up to `bookmark` not applied here yet. */
  private missing(bookmark: string): Pending[] {
    return [...this.applying, ...this.queue].filter((p) => p.bookmark !== null && p.bookmark <= bookmark);
  }

  /** Where a read that must see `bookmark` (any state, when undefined) goes, once it may. */
  async route(bookmark: string | undefined): Promise<'replica' | 'primary'> {
    await this.catchUp();
    if (bookmark === undefined) return 'replica';
    for (;;) {
      const missing = this.missing(bookmark);
      if (missing.length === 0) return 'replica';
      const wait = Math.max(...missing.map((p) => p.due)) - Date.now();
      if (wait > this.primaryTripMs) return 'primary';
      await sleep(Math.max(1, wait));
      await this.catchUp();
    }
  }

  /** Runs statements here (a batch, or one statement's method). */
  run(statements: readonly Sql[], method: string | undefined): Promise<unknown> {
    const prepared = statements.map((s) => this.db.prepare(s.sql).bind(...s.params));
    if (method === undefined) return this.db.batch(prepared);
    const one = prepared[0] as unknown as Record<string, () => Promise<unknown>>;
    return one[method]!();
  }
}

let replica: Replica | undefined;

/** The one replica of the isolate (the Worker and its objects share one under wrangler dev). */
export function replicaOf(db: D1Database, lagMs: number, primaryTripMs: number): Replica {
  replica ??= new Replica(db, lagMs, primaryTripMs);
  return replica;
}
