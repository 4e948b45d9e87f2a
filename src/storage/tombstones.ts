/** When a read was issued: its time, and its place in the order of this isolate's reads and revocations. */
export interface Issued {
  at: number;
  seq: number;
}

/**
 * Revocations a read issued before them must not undo: a fill issued earlier (a smaller `seq`)
 * is refused. Kept `ttlMs`: a fill issued before a revocation that arrives later than that has
 * expired anyway.
 */
export class Tombstones<K> {
  private readonly marks = new Map<K, { seq: number; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly capacity: number,
    private readonly now: () => number,
  ) {}

  add(key: K, seq: number): void {
    this.marks.delete(key);
    this.marks.set(key, { seq, until: this.now() + this.ttlMs });
    // Past capacity the oldest mark goes; it is also the one nearest to lapsing.
    if (this.marks.size > this.capacity) this.marks.delete(this.marks.keys().next().value as K);
  }

  /** Whether a fill of `key` issued at `issued` predates a revocation of it. */
  blocks(key: K, issued: Issued): boolean {
    const mark = this.marks.get(key);
    if (mark === undefined) return false;
    if (mark.until <= this.now()) {
      this.marks.delete(key);
      return false;
    }
    return issued.seq < mark.seq;
  }
}
