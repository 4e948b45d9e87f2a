import { hostProblem } from './public-host.ts';
import type { ChangeType } from './patch.ts';

/**
 * Webhook rules as plain functions: which changes a subscription receives, which URLs it may
 * name, how long it waits before retrying, when it gives up. No bindings, no clock of its own.
 */

export interface WebhookFilter {
  /** `null`: every type. */
  types: readonly ChangeType[] | null;
  /** `null`: records of every object. */
  objectIds: readonly number[] | null;
}

/** Whether a change of a record of `objectId` goes to a subscription with `filter`. */
export function matches(filter: WebhookFilter, change: { type: ChangeType; objectId: number }): boolean {
  return (
    (filter.types === null || filter.types.includes(change.type)) &&
    (filter.objectIds === null || filter.objectIds.includes(change.objectId))
  );
}

/** How retries and giving up are timed; tests shorten them, production keeps the defaults. */
export interface DeliveryTiming {
  /** The first retry's wait; each further failure doubles it. */
  retryBaseMs: number;
  /** The longest wait between two attempts. */
  retryMaxMs: number;
  /** Failing this long without a success disables the subscription. */
  disableAfterMs: number;
}

export const DEFAULT_TIMING: DeliveryTiming = {
  retryBaseMs: 5_000,
  retryMaxMs: 60 * 60 * 1000,
  disableAfterMs: 3 * 24 * 60 * 60 * 1000,
};

/**
 * The timing with a shorter first retry or a shorter time to give up, as set by the vars of a
 * test build (`"<retryBaseMs>"`, `"<disableAfterMs>"`); anything that is not a positive integer
 * keeps the default. The longest wait stays 720 first waits (5 s to 1 h).
 */
export function timingOf(retryBaseMs: string | undefined, disableAfterMs: string | undefined): DeliveryTiming {
  const positive = (text: string | undefined): number | undefined => {
    const n = text === undefined || !/^[1-9][0-9]{0,12}$/.test(text) ? undefined : Number(text);
    return n;
  };
  const base = positive(retryBaseMs) ?? DEFAULT_TIMING.retryBaseMs;
  return {
    retryBaseMs: base,
    retryMaxMs: base * 720,
    disableAfterMs: positive(disableAfterMs) ?? DEFAULT_TIMING.disableAfterMs,
  };
}

/** The wait after the `failures`-th failure in a row (1, 2, …): base, 2 × base, … capped at the maximum. */
export function backoffMs(failures: number, timing: DeliveryTiming): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  return Math.min(timing.retryBaseMs * 2 ** exponent, timing.retryMaxMs);
}

/** Whether a subscription failing since `failingSince` has failed long enough to be disabled at `now`. */
export function shouldDisable(failingSince: number, now: number, timing: DeliveryTiming): boolean {
  return now - failingSince >= timing.disableAfterMs;
}

/**
 * Where webhooks may be sent: `https:` URLs of public hosts (see hostProblem), and the origins of
 * `allowHttp` (comma-separated `http://host:port`, local development only), which may be plain
 * `http:` and local. Returns a problem message, or undefined when allowed.
 */
export function urlProblem(url: string, allowHttp: string | undefined): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not an absolute URL';
  }
  if (parsed.username !== '' || parsed.password !== '') return 'must not carry credentials';
  const allowed = (allowHttp ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  if ((parsed.protocol === 'http:' || parsed.protocol === 'https:') && allowed.includes(parsed.origin))
    return undefined;
  if (parsed.protocol !== 'https:') return 'must be an https: URL';
  return hostProblem(parsed.hostname);
}

/** Whether a request to `method` `path` writes records (its 2xx answer carries them). */
export function writesRecords(method: string, path: string): boolean {
  return ['POST', 'PATCH', 'DELETE'].includes(method) && /^\/(workspaces\/[^/]+\/)?records(\/|$)/.test(path);
}

/** The workspaces of the records in a write's answer: one record, or a batch's `[{ record }]`. */
export function workspacesOfAnswer(body: unknown): number[] {
  return workspacesOf(Array.isArray(body) ? body.map((item: { record?: unknown }) => item?.record) : [body]);
}

/** The workspaces these records are shared with, in order. */
export function workspacesOf(records: readonly unknown[]): number[] {
  const ids = new Set<number>();
  for (const record of records) {
    const shared = (record as { sharedWorkspaceIds?: unknown } | null | undefined)?.sharedWorkspaceIds;
    if (Array.isArray(shared)) for (const id of shared) if (Number.isSafeInteger(id)) ids.add(id as number);
  }
  return [...ids].sort((a, b) => a - b);
}
