import type { RecordOut } from '../schemas/record.ts';

/**
 * Batches of one isolate that share records take turns instead of racing. A batch is decided on
 * the versions it read and commits only while its records are still at them, so two batches
 * that share a record and run at once cost the loser a round trip and a second decision, and under
 * load (batches of random records) most of them lose several times. Here a batch waits for the
 * batches of this isolate that entered before it and share a record with it, then starts from
 * the states they committed: it usually commits at its first try.
 *
 * Only the order is kept here, never correctness: the version guards and the ledger still decide
 * every commit, so a write from elsewhere (a single patch, another isolate, a twin) that moves a
 * record on is met as before. Batches enter in one order, so none waits for one that waits for it.
 * A batch waits at most `maxMs`, and a batch that never left (its object was reset, its request
 * cut short) is forgotten `lifeMs` after it entered: it holds no one after that.
 */
export class BatchLane {
  /** The last batch that entered with each record, until it leaves. */
  private readonly last = new Map<number, Place>();

  constructor(private readonly lifeMs: number) {}

  /** A batch of `ids` enters: the batches of this isolate that share one of them are before it. */
  enter(ids: readonly number[], now = Date.now()): LanePlace {
    if (this.last.size > KEPT) this.forgetOver(now);
    const before = new Set<Place>();
    for (const id of ids) {
      const place = this.last.get(id);
      if (place !== undefined && place.until > now) before.add(place);
    }
    let leave: (committed: readonly RecordOut[]) => void = () => undefined;
    const place: Place = { committed: new Promise((resolve) => (leave = resolve)), until: now + this.lifeMs };
    for (const id of ids) this.last.set(id, place);
    let left = false;
    return {
      ready: (maxMs) => ready([...before], maxMs),
      leave: (committed = []) => {
        if (left) return;
        left = true;
        for (const id of ids) if (this.last.get(id) === place) this.last.delete(id);
        leave(committed);
      },
    };
  }

  /** Forgets the batches that entered more than `lifeMs` ago and never left. */
  private forgetOver(now: number): void {
    for (const [id, place] of this.last) if (place.until <= now) this.last.delete(id);
  }

  /** Records a batch may wait behind (for tests: none once every batch left). */
  get size(): number {
    return this.last.size;
  }
}

/** Records a lane holds before it looks for batches that never left (each forgotten when named again). */
const KEPT = 10_000;

interface Place {
  /** What the batch committed, once it left (nothing when it wrote nothing). */
  committed: Promise<readonly RecordOut[]>;
  /** When the batch is forgotten if it never left. */
  until: number;
}

/** A batch's place in the lane. */
export interface LanePlace {
  /**
   * Waits until the batches before it left (at most `maxMs`), and gives the newest states they
   * committed, by record id.
   */
  ready(maxMs: number): Promise<Map<number, RecordOut>>;
  /** The batch is over, however it ended: the ones after it go on from what it committed. */
  leave(committed?: readonly RecordOut[]): void;
}

async function ready(before: readonly Place[], maxMs: number): Promise<Map<number, RecordOut>> {
  const newest = new Map<number, RecordOut>();
  if (before.length === 0) return newest;
  let timer: number | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, maxMs)));
  const all = await Promise.race([Promise.all(before.map((place) => place.committed)), late]);
  clearTimeout(timer);
  for (const record of (all ?? []).flat()) {
    const known = newest.get(record.id);
    if (known === undefined || known.version < record.version) newest.set(record.id, record);
  }
  return newest;
}
