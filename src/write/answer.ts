import type { UpsertResult } from '../core/ledger.ts';
import { isOutcomeUnknown } from '../http/errors.ts';
import { asHttpError, problemParts } from '../http/problem.ts';
import type { RecordOut } from '../schemas/record.ts';
import type { StoredAnswer } from '../storage/idempotency.ts';
import type { Work } from '../storage/meter.ts';
import type { WriteAnswer } from './write.ts';

/**
 * A write's answer, rendered once where the write ran: the same bytes for its first answer, an
 * answer after a lost reply and a key's replay. Bodies are UTF-8 bytes (see WriteAnswer).
 */

const encoder = new TextEncoder();
export const JSON_TYPE = { 'Content-Type': 'application/json' };

/**
 * Items of a batch answer around each record's JSON: `[{"status":"Succeeded","record":…},…]`;
 * an upsert's items also say what it did to each (`"result":"created"`).
 */
export function itemsText(recordJsons: readonly string[], results?: readonly string[]): string {
  return `[${recordJsons
    .map((json, i) => {
      const result = results?.[i];
      const said = result === undefined ? '' : `"result":${JSON.stringify(result)},`;
      return `{"status":"Succeeded",${said}"record":${json}}`;
    })
    .join(',')}]`;
}

const workspacesOf = (records: readonly RecordOut[]): number[] => [
  ...new Set(records.flatMap((record) => record.sharedWorkspaceIds)),
];

/** One record (a patch, delete or restore), with its version as a strong ETag. */
export function recordAnswer(record: RecordOut, work: Work): WriteAnswer {
  return {
    status: 200,
    headers: { ...JSON_TYPE, ETag: `"${record.version}"` },
    body: encoder.encode(JSON.stringify(record)),
    workspaceIds: record.sharedWorkspaceIds,
    work,
  };
}

/** The items of a batch, a create (201) or an upsert (with what it did to each). */
export function itemsAnswer(
  records: readonly RecordOut[],
  status: number,
  work: Work,
  results?: readonly UpsertResult[],
): WriteAnswer {
  const text = itemsText(
    records.map((record) => JSON.stringify(record)),
    results,
  );
  return { status, headers: { ...JSON_TYPE }, body: encoder.encode(text), workspaceIds: workspacesOf(records), work };
}

/** A completed Idempotency-Key's answer, again: nothing was written now, so no one is woken. */
export function replayAnswer(stored: StoredAnswer, work: Work): WriteAnswer {
  return {
    status: stored.status,
    headers: { ...stored.headers, 'Idempotent-Replayed': 'true' },
    body: encoder.encode(stored.body),
    work,
  };
}

/** Any refusal or failure as problem+json; an unknown error is logged with the request id, never shown. */
export function problemAnswer(error: unknown, requestId: string, work: Work): WriteAnswer {
  const known = asHttpError(error, requestId);
  const { status, headers, body } = problemParts(known, requestId);
  const answer: WriteAnswer = { status, headers, body: encoder.encode(body), work };
  if (isOutcomeUnknown(known)) answer.outcomeUnknown = true;
  return answer;
}
