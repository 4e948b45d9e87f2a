import type { Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import type { CreateItemIn, PatchIn, PatchItemIn, RecordOut, UpsertIn } from '../schemas/record.ts';
import type { Work } from '../storage/meter.ts';
import type { TenantRoute } from '../domain/tenant.ts';

/**
 * A write as plain data: what the Worker hands the write engine once it has checked the caller,
 * the body's shape and, for a write of one record, that the caller may see that record. Nothing
 * here but one small rule; every value crosses an object call as it is.
 */

/** What a write does. */
export type Write =
  | { kind: 'create'; items: CreateItemIn[] }
  | {
      kind: 'patch';
      recordId: number;
      workspaceId: number;
      patch: PatchIn;
      /** A patch (absent), or a soft delete or restore: all take the record's turn alike. */
      action?: 'delete' | 'restore';
      ifMatch?: string;
    }
  | { kind: 'batch'; items: PatchItemIn[]; workspaceId?: number }
  | { kind: 'upsert'; objectId: number; body: UpsertIn };

export type WriteKind = Write['kind'];

/** An Idempotency-Key and the operation it is scoped to (method and canonical path). */
export interface IdempotencyKey {
  key: string;
  method: string;
  path: string;
}

/** What the Worker read from D1 for this write just now: the engine need not read it again. */
export interface WorkerRead {
  caller: Caller;
  objects: ObjectDef[];
  records: RecordOut[];
}

/** One write handed to the engine. */
export interface WriteCall {
  /** The write's id: the key of the one ledger row that finishes it. */
  id: string;
  requestId: string;
  /** The tenant whose records it writes, and its database. */
  tenant: TenantRoute;
  write: Write;
  /** The SHA-256 of the caller's API key. */
  keyHash: string;
  key?: IdempotencyKey;
  read?: WorkerRead;
  /** Sent again after its answer was lost: it may have run already. */
  again?: boolean;
}

/**
 * A write's finished HTTP answer, whatever it was (a record, items, a replay, a problem). Its
 * body is UTF-8: a string holding any character above U+00FF crosses an object call at two
 * bytes a character, and an answer of twenty records near 1 MiB each would pass the call's 32 MiB.
 */
export interface WriteAnswer {
  status: number;
  headers: Record<string, string>;
  body: Uint8Array;
  /** The workspaces of the records written: their webhook subscriptions are woken. */
  workspaceIds?: number[];
  /** Storage may have committed the write without saying so in time. */
  outcomeUnknown?: boolean;
  /** A refusal that the ledger holds for the write's id: no other run of the write can commit it. */
  closed?: boolean;
  /** The tenant had left the database the write ran on: where it is must be read again. */
  routeStale?: boolean;
  work: Work;
}

/** The record a write names first (its object runs the write and takes that record's turn without a call). */
export function firstRecordOf(write: Write): number | undefined {
  if (write.kind === 'patch') return write.recordId;
  if (write.kind === 'batch') return write.items[0]?.id;
  return undefined;
}
