import type { Context } from '../context.ts';
import type { PatchAnswer } from './record-queue.ts';
import { recordAccess, showsReference, type Caller } from '../domain/access.ts';
import type { ReferenceClaim } from '../domain/references.ts';
import { busy, HttpError, outcomeUnknown, rejected, type InputProblem } from '../http/errors.ts';
import { isUniqueViolation, uniqueClashes, uniqueViolation, type UniqueClaim } from '../storage/record-index.ts';
import {
  isInvalidReference,
  REFERENCING_COUNT,
  REFERENCING_SHOWN,
  referenceProblems,
  restricting,
} from '../storage/references.ts';

/**
 * D1 refuses what no check before the commit could decide alone (two racing writes of one
 * unique value, a reference to a record deleted meanwhile, a delete that live records hold
 * back), and rolls back the whole batch. The write then explains the refusal: one read after
 * the abort finds where, from what D1 holds now. The path with no refusal costs no read.
 */

/** What a write claimed, so that its refusal can be explained at the right pointers. */
export interface Claims {
  references: () => ReferenceClaim[];
  unique: () => UniqueClaim[];
  /** Whose unique values are named to the caller (those of records they can see). */
  caller: Caller;
  /** Where the problem points when no claim is found refused any more. */
  fallback: string;
  /** A write of one record in its turn: which, and whether it restores it. */
  record?: { id: number; restore: boolean };
}

/** The refusal D1 made of a write, explained; undefined when `error` is no refusal of its claims. */
export async function explained(context: Context, error: unknown, claims: Claims): Promise<HttpError | undefined> {
  if (isInvalidReference(error)) {
    // A reference names no live record of its target that the caller can read: say which.
    return rejected(
      await referenceProblems(context.primary, claims.references(), claims.caller.userId, claims.fallback),
    );
  }
  if (isUniqueViolation(error)) {
    // A unique field's value is held by another live record: say where, from what D1 holds now.
    const clashes = await uniqueClashes(
      context.primary,
      claims.unique(),
      (record) => recordAccess(claims.caller, record).read,
    );
    return rejected(clashes.length > 0 ? clashes : [uniqueViolation(claims.fallback)]);
  }
  return undefined;
}

const CHANGE_THEM = 'change or delete them first.';

/** The refusal of a delete that live records hold back: how many, and the first of them the caller can read. */
async function referencedRefusal(context: Context, caller: Caller, recordId: number): Promise<HttpError> {
  const { count, readable } = await restricting(context.primary, recordId, [...caller.roles.keys()], REFERENCING_SHOWN);
  const many = count > REFERENCING_COUNT ? `more than ${REFERENCING_COUNT}` : String(count);
  return new HttpError(409, {
    code: 'record_referenced',
    detail: `${many} live ${count === 1 ? 'record references' : 'records reference'} this record; ${CHANGE_THEM}`,
    errors: readable
      .filter((row) => showsReference(caller, row))
      .map((r) => ({
        recordId: r.recordId,
        code: 'record_referenced',
        message: `record ${r.recordId} of object ${r.objectId} references it by ${r.field}`,
      })),
  });
}

/** A restore D1 refused: the record would be live and reference a deleted record by a restricting field. */
const restoreRefused: InputProblem = {
  pointer: '',
  code: 'invalid_reference',
  message: 'the record references a deleted record by a field that restricts deletes; restore that record first',
  status: 422,
};

/** A record's turn that did not apply its write, explained: who holds a delete back, which reference is refused. */
export async function explainedTurn(context: Context, answer: PatchAnswer, claims: Claims): Promise<HttpError> {
  const code = answer.problem?.code;
  const record = claims.record;
  if (code === 'record_referenced' && record !== undefined) return referencedRefusal(context, claims.caller, record.id);
  if (code === 'invalid_reference') {
    if (record?.restore === true) return rejected([restoreRefused]);
    return rejected(
      await referenceProblems(context.primary, claims.references(), claims.caller.userId, claims.fallback),
    );
  }
  return refusedInTurn(answer.status, answer.problem);
}

/** The answer of a record's queue that did not apply a patch, as an HTTP error. */
function refusedInTurn(status: number, problem: InputProblem | undefined): HttpError {
  if (status === 503) return problem?.code === 'outcome_unknown' ? outcomeUnknown() : busy();
  if (status === 412)
    return new HttpError(412, {
      code: 'precondition_failed',
      title: 'Precondition failed',
      detail: 'If-Match does not match the current version.',
    });
  return rejected(problem === undefined ? [] : [{ ...problem, status }], status);
}
