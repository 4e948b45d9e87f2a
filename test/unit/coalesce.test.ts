import { describe, expect, it } from 'vitest';
import { coalesced } from '../../src/push/coalesce.ts';

/** A send whose calls are recorded and end only when the test lets them. */
function gatedSend() {
  const sent: number[] = [];
  const gates: (() => void)[] = [];
  const send = (key: number) => {
    sent.push(key);
    return new Promise<void>((resolve) => gates.push(resolve));
  };
  const release = async () => {
    for (const open of gates.splice(0)) open();
    // Let the coalescer see the end and start what it owes.
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return { sent, send, release };
}

describe('wake-ups coalesced per key', () => {
  it('sends a key asked while idle at once, and again for an ask after the send ended', async () => {
    const { sent, send, release } = gatedSend();
    const wake = coalesced(send);
    const first = wake(7);
    expect(sent).toEqual([7]);
    await release();
    await first;
    void wake(7);
    expect(sent).toEqual([7, 7]);
    await release();
  });

  it('turns any number of asks during a send into one more send, made by the first ask after its own', async () => {
    const { sent, send, release } = gatedSend();
    const wake = coalesced(send);
    let firstOver = false;
    void wake(1).then(() => (firstOver = true));
    // The others are over at once: none waits on a send another caller made.
    await Promise.all(Array.from({ length: 50 }, () => wake(1)));
    expect(sent).toEqual([1]);
    await release();
    expect(sent).toEqual([1, 1]);
    // The first ask's promise covers the send it owes the others.
    expect(firstOver).toBe(false);
    await release();
    expect(firstOver).toBe(true);
    expect(sent).toEqual([1, 1]);
  });

  it('keeps keys apart: one under way does not hold back or absorb another', async () => {
    const { sent, send, release } = gatedSend();
    const wake = coalesced(send);
    void wake(1);
    void wake(2);
    void wake(1);
    expect(sent).toEqual([1, 2]);
    await release();
    expect(sent).toEqual([1, 2, 1]);
    await release();
  });

  it('goes on after a failed send: the asks made during it are still sent', async () => {
    const sent: number[] = [];
    let fail = true;
    const wake = coalesced(async (key: number) => {
      sent.push(key);
      await Promise.resolve();
      if (fail) {
        fail = false;
        throw new Error('object out of reach');
      }
    });
    const first = wake(3);
    void wake(3);
    await first;
    expect(sent).toEqual([3, 3]);
    await wake(3);
    expect(sent).toEqual([3, 3, 3]);
  });

  it('lets a send that never ends hold its key only for a while', async () => {
    const sent: number[] = [];
    let clock = 0;
    const wake = coalesced(
      (key: number) => {
        sent.push(key);
        return new Promise<void>(() => {});
      },
      { staleMs: 5_000, now: () => clock },
    );
    void wake(4);
    clock = 4_999;
    void wake(4);
    expect(sent).toEqual([4]);
    clock = 5_000;
    void wake(4);
    expect(sent).toEqual([4, 4]);
  });

  it('sends for others for a while only: then its last send covers them and a later ask runs its own', async () => {
    let clock = 0;
    const sent: number[] = [];
    const gates: (() => void)[] = [];
    const wake = coalesced(
      (key: number) => {
        sent.push(key);
        return new Promise<void>((resolve) => gates.push(resolve));
      },
      { staleMs: 5_000, ownMs: 10_000, now: () => clock },
    );
    const release = async () => {
      for (const open of gates.splice(0)) open();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    };
    let ownerOver = false;
    void wake(5).then(() => (ownerOver = true));
    // Asks keep coming during every send: the owner sends once more after each.
    for (let t = 1; t <= 3; t++) {
      clock = t * 4_000;
      void wake(5);
      await release();
    }
    expect(sent).toHaveLength(4);
    // Past 10 s the owner's send in flight is its last: an ask now starts a run of its own.
    clock = 13_000;
    let laterOver = false;
    void wake(5).then(() => (laterOver = true));
    expect(sent).toHaveLength(5);
    await release();
    expect(ownerOver).toBe(true);
    expect(laterOver).toBe(true);
    expect(sent).toHaveLength(5);
  });
});
