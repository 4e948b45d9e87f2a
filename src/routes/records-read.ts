import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { recordAccess } from '../domain/access.ts';
import { bearerToken, sha256Hex } from '../http/auth.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import { pathIds } from '../http/params.ts';
import { recordResponse } from '../http/respond.ts';

/** GET /records/{recordId} and GET /workspaces/{workspaceId}/records/{recordId}: viewers may read. */
export async function readRecord(request: IRequest, { recall }: Context): Promise<Response> {
  const keyHash = await sha256Hex(bearerToken(request));
  const inWorkspace = request.params.workspaceId !== undefined;
  const { recordId, workspaceId } = inWorkspace
    ? pathIds(request.params, 'workspaceId', 'recordId')
    : { ...pathIds(request.params, 'recordId'), workspaceId: undefined };
  const { caller, records } = await recall.recordContext(keyHash, [recordId]);
  if (caller === undefined) throw unauthorized();
  const record = records.get(recordId);
  if (record === undefined || recordAccess(caller, record.sharedWorkspaceIds, workspaceId) === 'none') {
    throw notFound('Record');
  }
  return recordResponse(record);
}
