import type { Context } from '../context.ts';
import { recordAccess, type Caller } from '../domain/access.ts';
import { referenceClaims } from '../domain/references.ts';
import { REFERENCING_COUNT, REFERENCING_SHOWN, referenceProblems, restricting } from '../storage/references.ts';
import { patchProblems } from '../domain/patch.ts';
import { busy, HttpError, outcomeUnknown, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { PatchBody, type PatchIn, type RecordOut } from '../schemas/record.ts';
import type { PatchContext } from '../storage/recall.ts';
import { newWriteId } from '../core/ledger.ts';
import { CALL_DEADLINE_MS, TURN_TIMEOUT_MS } from '../writing/deadlines.ts';
import type { PatchOneInput } from '../record-rpc.ts';
import { claimKey, holding, wellShaped, type Written } from './idempotent.ts';

export type { PatchOneInput };

/** The answer of a record object that did not apply a patch, as an HTTP error. */
export function refused(status: number, problem: InputProblem | undefined): HttpError {
  if (status === 503) return problem?.code === 'outcome_unknown' ? outcomeUnknown() : busy();
  if (status === 412)
    return new HttpError(412, {
      code: 'precondition_failed',
      title: 'Precondition failed',
      detail: 'If-Match does not match the current version.',
    });
  return rejected(problem === undefined ? [] : [{ ...problem, status }], status);
}

/**
 * Patching one record (and delete, restore): the caller, the record's facts and its definition (from the
 * isolate's memory, else one D1 read) decide everything that does not depend on the record's
 * turn; the record's object then applies the write in turn and stores it. The order of checks
 * is the contract's: 401, then the request's shape (400), then its Idempotency-Key (replay,
 * 409, 422), then the record (404, 403, 409, 422), then the turn (412, 503). A refusal is
 * never made on memory alone. `callId` is the write's id: the record's queue finishes it in the
 * ledger once. A coordinator that runs this again under the same id (`rerun`: the Worker sent
 * it again, near.ts) may be re-running a write that committed: a refusal it finds here is
 * answered only once the ledger holds it, else what committed is the answer.
 */
export async function patchOne(
  context: Context,
  input: PatchOneInput,
  callId: string = newWriteId(),
  rerun = false,
): Promise<Written<RecordOut>> {
  const parsed = input.body.ok
    ? parseObject(PatchBody, input.body.value, (body) => fieldValueDuplicates(body, ''))
    : undefined;
  let decided = await context.recall.patchContext(input.keyHash, input.recordId);
  if (decided.caller === undefined) throw unauthorized();
  const patch = wellShaped(input.body, parsed, input.idempotency);
  const held = await claimKey(context, input.idempotency, decided.caller.userId, patch, callId);
  if ('replay' in held) return held;

  return holding(context, held.claim, async () => {
    let problems = judge(decided, input.workspaceId, patch, input.action);
    if (problems.length > 0 && decided.remembered) {
      decided = await context.recall.patchContext(input.keyHash, input.recordId, true);
      if (decided.caller === undefined) throw unauthorized();
      problems = judge(decided, input.workspaceId, patch, input.action);
    }
    const { caller, def, snapshot } = decided;
    if (problems.length > 0 || caller === undefined || def === undefined) {
      const committed = rerun ? await committedInstead(context, callId, problems) : undefined;
      if (committed !== undefined) return { value: committed };
      throw rejected(problems);
    }

    const call = {
      recordId: input.recordId,
      callId,
      def,
      patch,
      userId: caller.userId,
      ...(snapshot === undefined ? {} : { snapshot }),
      ...(input.ifMatch === undefined ? {} : { ifMatch: input.ifMatch }),
      ...(held.claim === undefined ? {} : { claim: held.claim }),
      ...(input.action === undefined ? {} : { action: input.action }),
    };
    const answer = await context.recordObjects.patch(call, Date.now() + CALL_DEADLINE_MS);
    if (answer.status === 200 && answer.record !== undefined) return { value: answer.record };
    if (answer.problem?.code === 'record_referenced') throw await referencedError(context, caller, input.recordId);
    if (answer.problem?.code === 'invalid_reference') {
      if (input.action === 'restore') throw rejected([restoreRefused]);
      const claims = referenceClaims(def, patch.fieldValues ?? [], snapshot?.fieldValues ?? [], '');
      throw rejected(await referenceProblems(context.env.DB, claims, caller.userId, '/fieldValues'));
    }
    throw refused(answer.status, answer.problem);
  });
}

/** A restore D1 refused: the record would be live and reference a deleted record by a restricting field. */
const restoreRefused: InputProblem = {
  pointer: '',
  code: 'invalid_reference',
  message: 'the record references a deleted record by a field that restricts deletes; restore that record first',
  status: 422,
};

const CHANGE_THEM = 'change or delete them first.';

/** The refusal of a delete that live records hold back: how many, and the first of them the caller can read. */
async function referencedError(context: Context, caller: Caller, recordId: number): Promise<HttpError> {
  const { count, readable } = await restricting(context.env.DB, recordId, [...caller.roles.keys()], REFERENCING_SHOWN);
  const many = count > REFERENCING_COUNT ? `more than ${REFERENCING_COUNT}` : String(count);
  return new HttpError(409, {
    code: 'record_referenced',
    detail: `${many} live ${count === 1 ? 'record references' : 'records reference'} this record; ${CHANGE_THEM}`,
    errors: readable.map((r) => ({
      recordId: r.recordId,
      code: 'record_referenced',
      message: `record ${r.recordId} of object ${r.objectId} references it by ${r.field}`,
    })),
  });
}

/**
 * Before a re-run answers a refusal, the ledger finishes its write id as that refusal; if the id
 * was finished already and committed, the record it committed is the answer instead.
 */
export async function committedInstead(
  context: Context,
  callId: string,
  problems: readonly InputProblem[],
): Promise<RecordOut | undefined> {
  const deadline = Date.now() + TURN_TIMEOUT_MS;
  const committed = await context.writes.fence(callId, rejected(problems).status, deadline, problems);
  if (committed === undefined || 'f' in committed) return undefined;
  return ((await context.writes.answered(committed, deadline)) ?? [])[0];
}

/** Delete and restore may act on a deleted record; a patch may not (409). */
function judge(
  { caller, facts, def }: PatchContext,
  workspaceId: number,
  patch: PatchIn,
  action?: 'delete' | 'restore',
): InputProblem[] {
  const access = caller && facts ? recordAccess(caller, facts.sharedWorkspaceIds, workspaceId) : 'none';
  const seen = action !== undefined && facts !== undefined ? { ...facts, deleted: false } : facts;
  return patchProblems(seen, access, def, patch, '');
}
