import { describe, expect, it, vi } from 'vitest';
import type { RecordOut } from '../../src/schemas/record.ts';
import { BatchLane } from '../../src/write/batch-lane.ts';

const at = (id: number, version: number) => ({ id, version }) as RecordOut;

/** Whether a promise has settled after the pending reactions ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let over = false;
  void promise.then(() => (over = true));
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return over;
}

describe('batches of one isolate take turns on the records they share', () => {
  it('lets a batch that shares no record with the ones before it go at once', async () => {
    const lane = new BatchLane(60_000);
    lane.enter([1, 2]);
    const other = lane.enter([3, 4]);
    expect(await other.ready(1_000)).toEqual(new Map());
  });

  it('holds a batch until each one before it that shares a record left, and gives it their newest states', async () => {
    const lane = new BatchLane(60_000);
    const first = lane.enter([1, 2]);
    const second = lane.enter([2, 3]);
    const third = lane.enter([3, 1, 9]);
    const thirdReady = third.ready(10_000);
    expect(await settled(second.ready(10_000))).toBe(false);
    // The third waits for the second (record 3), which waits for the first; the first holds 1 too.
    first.leave([at(1, 5), at(2, 7)]);
    expect(await settled(thirdReady)).toBe(false);
    second.leave([at(2, 8), at(3, 4)]);
    // Only the newest state of each record counts: record 2 at 8, not 7.
    expect(await thirdReady).toEqual(
      new Map([
        [1, at(1, 5)],
        [2, at(2, 8)],
        [3, at(3, 4)],
      ]),
    );
    third.leave();
    expect(lane.size).toBe(0);
  });

  it('gives nothing for a batch before that wrote nothing; forgets records once their last batch left', async () => {
    const lane = new BatchLane(60_000);
    const refused = lane.enter([1]);
    const next = lane.enter([1]);
    refused.leave();
    // Leaving twice changes nothing: the place of the next batch is kept.
    refused.leave([at(1, 99)]);
    expect(await next.ready(1_000)).toEqual(new Map());
    expect(lane.size).toBe(1);
    next.leave([at(1, 2)]);
    expect(lane.size).toBe(0);
    expect(await lane.enter([1]).ready(1_000)).toEqual(new Map());
  });

  it('stops waiting for a batch that never leaves after the longest wait, with no states from it', async () => {
    vi.useFakeTimers();
    try {
      const lane = new BatchLane(60_000);
      lane.enter([1]);
      const stuck = lane.enter([1]).ready(2_000);
      expect(await settled(stuck)).toBe(false);
      await vi.advanceTimersByTimeAsync(1_999);
      expect(await settled(stuck)).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(await stuck).toEqual(new Map());
    } finally {
      vi.useRealTimers();
    }
  });

  it('forgets a batch that never left once its life is over: the ones after it go at once', async () => {
    const lane = new BatchLane(5_000);
    lane.enter([1, 2], 1_000);
    const during = lane.enter([2], 5_999);
    expect(await settled(during.ready(60_000))).toBe(false);
    // The first entered at 1000: from 6000 on nobody waits for it, and its records are forgotten.
    expect(await lane.enter([1], 6_000).ready(60_000)).toEqual(new Map());
    expect(lane.size).toBe(2);
  });

  it('never lets two batches wait for each other: a batch waits only for ones that entered before it', async () => {
    const lane = new BatchLane(60_000);
    const places = Array.from({ length: 50 }, (_, i) => lane.enter([i % 7, (i * 3) % 11, 100 + (i % 2)]));
    // Each leaves as soon as it is ready: all of them finish, in the order they entered.
    const order: number[] = [];
    await Promise.all(
      places.map(async (place, i) => {
        await place.ready(60_000);
        order.push(i);
        place.leave([at(100 + (i % 2), i)]);
      }),
    );
    expect(order).toHaveLength(50);
    // Every batch shares record 100 or 101 with the one two places before it.
    for (let i = 2; i < 50; i++) expect(order.indexOf(i)).toBeGreaterThan(order.indexOf(i - 2));
    expect(lane.size).toBe(0);
  });
});
