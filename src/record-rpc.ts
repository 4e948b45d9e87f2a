import type { TurnAnswer } from './write/record-queue.ts';
import type { WriteAnswer, WriteCall } from './write/write.ts';

/**
 * What the Worker asks of a record's Durable Object, in a module that imports no code that runs:
 * the Worker's stubs are typed by this interface, not the class; `RecordObject` implements it.
 */
export interface RecordRpc {
  /** Runs a write in this object, once per write id while remembered. Never rejects: a refusal is an answer. */
  run(call: WriteCall): Promise<WriteAnswer>;
  /** A batch's turn in this record's order. */
  turn(recordId: number, version: number): Promise<TurnAnswer>;
}

/** The record objects' class as the binding sees it. */
export type RecordObjectRpc = RecordRpc & Rpc.DurableObjectBranded;
