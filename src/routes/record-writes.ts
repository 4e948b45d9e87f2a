import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { answeredWorkspaces } from '../http/respond.ts';
import { admitBatch, admitCreate, admitPatch, admitUpsert } from '../write/admit.ts';
import { submit } from '../write/submit.ts';
import type { WriteAnswer, WriteCall } from '../write/write.ts';

/**
 * Every write of records: the Worker checks it (write/admit.ts), the engine runs it where it
 * belongs (write/submit.ts), and its answer, rendered where it ran, goes out as it is.
 */

async function written(context: Context, call: WriteCall): Promise<Response> {
  const answer: WriteAnswer = await submit(context, call);
  const response = new Response(answer.body, { status: answer.status, headers: answer.headers });
  if (answer.workspaceIds !== undefined) answeredWorkspaces.set(response, answer.workspaceIds);
  return response;
}

/** POST /records/batch: create 1 to 20 records, all or nothing. */
export const createRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitCreate(request, context));

/** PATCH /workspaces/{workspaceId}/records/{recordId}: patch one record, honouring If-Match. */
export const patchRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context));

/** DELETE /workspaces/{workspaceId}/records/{recordId}: a soft delete, in the record's turn like a patch. */
export const deleteRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context, 'delete'));

/** POST …/records/{recordId}/restore: the reverse of a delete. */
export const restoreRecord = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitPatch(request, context, 'restore'));

/** PATCH .../records/batch, with a workspace in the path or without: patch 1 to 20 records, all or nothing. */
export const patchRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitBatch(request, context));

/** POST /objects/{objectId}/records/upsert: create or update 1 to 20 records by a unique field, all or nothing. */
export const upsertRecords = async (request: IRequest, context: Context): Promise<Response> =>
  written(context, await admitUpsert(request, context));
