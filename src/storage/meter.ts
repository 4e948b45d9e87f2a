import { latestBookmark } from '../http/bookmark.ts';

/**
 * Counts the round trips a request makes, for `Server-Timing`: every D1 call (a `batch()` is
 * one) and every Durable Object call, with their durations, and D1's own count of the rows
 * they wrote and read (the objects' work included: it comes back with their answers).
 */
export interface Work {
  d1Trips: number;
  d1Ms: number;
  rowsWritten?: number;
  rowsRead?: number;
  /** Object calls made by the callee itself (a coordinator's turns and patches). */
  doCalls?: number;
  /** The newest D1 bookmark the work reached (a write: its commit's). */
  bookmark?: string;
}

export class Meter implements Work {
  d1Trips = 0;
  d1Ms = 0;
  rowsWritten = 0;
  rowsRead = 0;
  doCalls = 0;
  doMs = 0;
  /** Most object calls in flight at once: 20 for a batch of 20 taken in parallel, 1 if in sequence. */
  doPeak = 0;
  private doInFlight = 0;
  private readonly sessions: Pick<D1DatabaseSession, 'getBookmark'>[] = [];
  private noted: string | undefined;

  /** A D1 session whose bookmark counts toward the request's (read when asked: it moves as queries run). */
  track<S extends Pick<D1DatabaseSession, 'getBookmark'>>(session: S): S {
    this.sessions.push(session);
    return session;
  }

  /** The newest bookmark of the request's D1 work, its objects' included. */
  newestBookmark(): string | undefined {
    return latestBookmark(this.noted, ...this.sessions.map((session) => session.getBookmark()));
  }

  async d1<T>(call: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      const result = await call();
      for (const { meta } of (Array.isArray(result) ? result : [result]) as {
        meta?: { rows_written?: number; rows_read?: number };
      }[]) {
        this.rowsWritten += meta?.rows_written ?? 0;
        this.rowsRead += meta?.rows_read ?? 0;
      }
      return result;
    } finally {
      this.d1Trips++;
      this.d1Ms += performance.now() - start;
    }
  }

  /** A Durable Object call; the D1 work done inside the object is added from its answer. */
  async durable<T extends { work: Work }>(call: () => Promise<T>): Promise<T> {
    const start = performance.now();
    this.doPeak = Math.max(this.doPeak, ++this.doInFlight);
    try {
      return this.adding(await call());
    } finally {
      this.doInFlight--;
      this.doCalls++;
      this.doMs += performance.now() - start;
    }
  }

  /** A call into the record's queue from inside its own object: its D1 work counts, and no object call. */
  async within<T extends { work: Work }>(call: () => Promise<T>): Promise<T> {
    return this.adding(await call());
  }

  private adding<T extends { work: Work }>(answer: T): T {
    this.d1Trips += answer.work.d1Trips;
    this.d1Ms += answer.work.d1Ms;
    this.rowsWritten += answer.work.rowsWritten ?? 0;
    this.rowsRead += answer.work.rowsRead ?? 0;
    this.doCalls += answer.work.doCalls ?? 0;
    this.noted = latestBookmark(this.noted, answer.work.bookmark);
    return answer;
  }

  work(): Work {
    const work: Work = { d1Trips: this.d1Trips, d1Ms: this.d1Ms };
    if (this.rowsWritten > 0 || this.rowsRead > 0)
      [work.rowsWritten, work.rowsRead] = [this.rowsWritten, this.rowsRead];
    if (this.doCalls > 0) work.doCalls = this.doCalls;
    const bookmark = this.newestBookmark();
    if (bookmark !== undefined) work.bookmark = bookmark;
    return work;
  }

  private tellsRows = true;

  /**
   * For a caller whose role hides records: the rows a page read count the records it passed over,
   * and would tell how many there are. Its answer tells round trips and calls alone.
   */
  hideRows(): void {
    this.tellsRows = false;
  }

  /**
   * `rows`: whether to tell the rows D1 wrote and read. A 404 does not: reading a row that exists
   * costs more rows than finding none, which would tell a record hidden from the caller from one
   * that does not exist.
   */
  header(rows = true): string {
    const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`;
    return (
      `d1;dur=${this.d1Ms.toFixed(1)};desc="${plural(this.d1Trips, 'round trip', 'round trips')}", ` +
      `do;dur=${this.doMs.toFixed(1)};desc="${plural(this.doCalls, 'call', 'calls')}"` +
      (rows && this.tellsRows ? `, rows;desc="${this.rowsWritten} written, ${this.rowsRead} read"` : '')
    );
  }
}
