import type { Settled } from './core/settle.ts';
import type { InputProblem, ProblemCode } from './http/errors.ts';
import type { RecordOut } from './schemas/record.ts';
import type { StoredAnswer } from './storage/idempotency.ts';
import type { Work } from './storage/meter.ts';
import type { PatchAnswer, PatchCall, TurnAnswer } from './writing/record-queue.ts';

/**
 * What the Worker sends a record's Durable Object and what it answers: the object's RPC surface
 * and the plain data that crosses it, in a module that imports no code that runs. The Worker's
 * stubs are typed by this interface, not the class; `RecordObject` implements it.
 */

/** What a write learns from its request about its key: the key, or the problem with the header. */
export interface KeyRequest {
  key: string | undefined;
  method: string;
  path: string;
  problems: InputProblem[];
}

export interface CreateInput {
  keyHash: string;
  body: Settled<unknown>;
  idempotency: KeyRequest;
}

export interface PatchOneInput {
  keyHash: string;
  workspaceId: number;
  recordId: number;
  /** Absent for delete and restore, which take no body. */
  body: Settled<unknown>;
  ifMatch: string | undefined;
  idempotency: KeyRequest;
  /** A patch (absent), or a soft delete or restore: all take the record's turn alike. */
  action?: 'delete' | 'restore';
}

export interface PatchBatchInput {
  keyHash: string;
  /** Present for a batch in a workspace, absent for one without. */
  workspaceId: number | undefined;
  body: Settled<unknown>;
  idempotency: KeyRequest;
}

/** An operation the Worker hands over to run near D1. */
export type NearRun =
  | { op: 'patchBatch'; input: PatchBatchInput }
  | { op: 'patchOne'; input: PatchOneInput }
  | { op: 'create'; input: CreateInput };

export interface NearCall {
  callId: string;
  run: NearRun;
  /** Sent again after a lost answer: it may have run before. */
  resent?: boolean;
  /** The record whose object runs the call (its name); absent for a shared coordinator. */
  home?: number;
}

/** Flat, structured-clone safe: a value, a replayed answer, or an HTTP error's parts. */
export interface NearAnswer {
  value?: RecordOut | RecordOut[];
  replay?: StoredAnswer;
  error?: {
    status: number;
    code: ProblemCode;
    title: string;
    detail?: string;
    errors?: readonly InputProblem[];
    headers?: Readonly<Record<string, string>>;
  };
  work: Work;
}

/** The RPC methods of a record's object. */
export interface RecordRpc {
  /** Runs an operation handed over by the Worker, once per call id while remembered. Never rejects. */
  near(call: NearCall): Promise<NearAnswer>;
  /** Applies one patch of this record in turn. */
  patch(call: PatchCall): Promise<PatchAnswer>;
  /** A batch's turn in this record's order. */
  turn(recordId: number, version: number): Promise<TurnAnswer>;
}

/** The record objects' class as the binding sees it. */
export type RecordObjectRpc = RecordRpc & Rpc.DurableObjectBranded;
