import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { patchProblems } from '../domain/patch.ts';
import { HttpError, invalidBody, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { fieldValueDuplicates, parseObject } from '../schemas/parse.ts';
import { PatchBody, type PatchIn, type RecordOut } from '../schemas/record.ts';
import type { PatchContext } from '../storage/recall.ts';
import type { Settled } from '../routes/settle.ts';
import { patchInObject } from './objects.ts';

export interface PatchOneInput {
  keyHash: string;
  workspaceId: number;
  recordId: number;
  body: Settled<unknown>;
  ifMatch: string | undefined;
}

export const busy = (): HttpError =>
  new HttpError(503, 'unavailable', 'Record busy', 'The record could not take this request within 10 seconds; nothing was written.', undefined, {
    'Retry-After': '1',
  });

/** The answer of a record object that did not apply a patch, as an HTTP error. */
export function refused(status: number, problem: InputProblem | undefined): HttpError {
  if (status === 503) return busy();
  if (status === 412) return new HttpError(412, 'precondition_failed', 'Precondition failed', 'If-Match does not match the current version.');
  return rejected(problem === undefined ? [] : [problem]);
}

/**
 * SPEC 4.2: the caller, the record's facts and its definition (from the isolate's memory, else
 * one D1 read) decide everything that does not depend on the record's turn; the record's object
 * then applies the patch in turn and writes it. A refusal is never made on memory alone.
 */
export async function patchOne({ env, recall, meter }: Context, input: PatchOneInput): Promise<RecordOut> {
  const parsed = input.body.ok ? parseObject(PatchBody, input.body.value, (body) => fieldValueDuplicates(body, '')) : undefined;
  let context = await recall.patchContext(input.keyHash, input.recordId);
  if (context.caller === undefined) throw unauthorized();
  if (!input.body.ok) throw input.body.error;
  if (parsed?.ok !== true) throw invalidBody(parsed?.problems ?? []);

  let problems = judge(context, input.workspaceId, parsed.value);
  if (problems.length > 0 && context.remembered) {
    context = await recall.patchContext(input.keyHash, input.recordId, true);
    if (context.caller === undefined) throw unauthorized();
    problems = judge(context, input.workspaceId, parsed.value);
  }
  const { caller, def, snapshot } = context;
  if (problems.length > 0 || caller === undefined || def === undefined) throw rejected(problems);

  const call = { recordId: input.recordId, def, patch: parsed.value, userId: caller.userId };
  const answer = await meter.durable(() =>
    patchInObject(env, { ...call, ...(snapshot === undefined ? {} : { snapshot }), ...(input.ifMatch === undefined ? {} : { ifMatch: input.ifMatch }) }),
  );
  if (answer.status === 200 && answer.record !== undefined) return answer.record;
  throw refused(answer.status, answer.problem);
}

function judge({ caller, facts, def }: PatchContext, workspaceId: number, patch: PatchIn): InputProblem[] {
  const access = caller && facts ? recordAccess(caller, facts.sharedWorkspaceIds, workspaceId) : 'none';
  return patchProblems(facts, access, def, patch, '');
}
