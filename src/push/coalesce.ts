/**
 * Wake-ups sent at most once at a time per key, none lost: `send(key)` runs for a key asked
 * while no send of it is under way; a key asked during a send is sent once more when that send
 * ends (once, however often it was asked meanwhile), so what was asked for after a send started
 * is always followed by a send that starts after it. Under load a workspace's writes thus cost
 * about one wake-up per round trip instead of one each.
 *
 * The sends run in the run of the ask that found the key idle: its promise ends when they all
 * have; an ask during a send gets a promise that is already over. (The runtime keeps each
 * request's work apart: a request may wait only on its own, never on another's send.) A send
 * under way for `staleMs` (the run it belongs to was cut short) no longer holds its key, and a run
 * sends for others for `ownMs` at most. `send` reports its own failures, which end nothing here.
 */
export function coalesced<K>(
  send: (key: K) => Promise<void>,
  { staleMs = 5_000, ownMs = 10_000, now = Date.now }: { staleMs?: number; ownMs?: number; now?: () => number } = {},
): (key: K) => Promise<void> {
  const underWay = new Map<K, { again: boolean; since: number }>();
  return (key) => {
    const busy = underWay.get(key);
    if (busy !== undefined && now() - busy.since < staleMs) {
      busy.again = true;
      return Promise.resolve();
    }
    const state = { again: true, since: now() };
    underWay.set(key, state);
    const started = state.since;
    return (async () => {
      try {
        while (state.again) {
          state.again = false;
          // A run keeps sending for others only so long: its last send covers the asks made so far,
          // and an ask after it starts a run of its own (the runtime ends a run's waiting in time).
          if (now() - started >= ownMs) underWay.delete(key);
          state.since = now();
          try {
            await send(key);
          } catch {
            // `send` reports its own failures; the asks it covered are over either way.
          }
          // Handed over, or taken over as stale: another run sends from now on.
          if (underWay.get(key) !== state) break;
        }
      } finally {
        // A send taken over as stale leaves the key to the one that took it over.
        if (underWay.get(key) === state) underWay.delete(key);
      }
    })();
  };
}
