/** What the tests' webhook receiver (tools/webhook-receiver.ts) logs of each delivery. */
export interface Received {
  id: string;
  timestamp: string;
  signature: string;
  body: string;
  /** When it arrived, epoch ms. */
  at: number;
  /** What the receiver answered. */
  status: number;
}

/** Deliveries that the receiver accepted (2xx), deduplicated by `webhook-id`, first receipt kept. */
export function accepted(log: readonly Received[]): Received[] {
  const seen = new Set<string>();
  return log.filter((entry) => entry.status < 300 && !seen.has(entry.id) && seen.add(entry.id) !== undefined);
}
