/**
 * What an object remembers of the calls it answered, so a call sent again (its first answer was
 * lost) joins its first run instead of running again. Bounded three ways: by age, by count and
 * by bytes, since one answer may carry records of up to 1 MiB each. Memory only saves work: a
 * call it forgot runs again under the same write id, and the ledger settles it.
 */

/** What an answer still running is counted as, until its size is known. */
export const PENDING_BYTES = 256;

export class CallMemory<T> {
  private readonly entries = new Map<string, { answer: Promise<T>; expires: number; bytes: number }>();
  private total = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly maxBytes: number,
    /** An answer's size in bytes (an estimate that does not undercount). */
    private readonly weigh: (answer: T) => number,
    private readonly now: () => number,
  ) {}

  get(id: string): Promise<T> | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (entry.expires > this.now()) return entry.answer;
    this.forget(id);
    return undefined;
  }

  /** Remembers a call's answer; once it settles, it is counted at its size (or forgotten if it failed). */
  set(id: string, answer: Promise<T>): void {
    this.forget(id);
    this.entries.set(id, { answer, expires: this.now() + this.ttlMs, bytes: PENDING_BYTES });
    this.total += PENDING_BYTES;
    this.trim();
    answer.then(
      (value) => {
        const entry = this.entries.get(id);
        if (entry?.answer !== answer) return;
        const bytes = this.weigh(value);
        this.total += bytes - entry.bytes;
        entry.bytes = bytes;
        if (bytes > this.maxBytes) this.forget(id);
        this.trim();
      },
      () => {
        if (this.entries.get(id)?.answer === answer) this.forget(id);
      },
    );
  }

  /** Bytes the remembered answers hold (those still running counted at PENDING_BYTES). */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  private forget(id: string): void {
    const entry = this.entries.get(id);
    if (entry === undefined) return;
    this.entries.delete(id);
    this.total -= entry.bytes;
  }

  /** Forgets the oldest answers until the count and the bytes are within bounds. */
  private trim(): void {
    for (const id of this.entries.keys()) {
      if (this.entries.size <= this.maxEntries && this.total <= this.maxBytes) return;
      this.forget(id);
    }
  }
}

/** The size of an answer as JSON, in bytes of UTF-16 (two a unit: what a string costs in memory). */
export function jsonBytes(answer: unknown): number {
  return 2 * (JSON.stringify(answer)?.length ?? 0);
}
