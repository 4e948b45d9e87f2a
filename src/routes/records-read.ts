import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { recordAccess, visibleDef, withoutHidden } from '../domain/access.ts';
import { keyHashOf } from '../http/auth.ts';
import { expandProblems } from '../domain/references.ts';
import { invalidQuery, notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { recordResponse } from '../http/respond.ts';
import { expandParam, withExpanded, withLookupValues } from './expand.ts';

/** GET /records/{recordId} and GET /workspaces/{workspaceId}/records/{recordId}: viewers may read. */
export async function readRecord(request: IRequest, context: Context): Promise<Response> {
  const { cached } = context;
  const keyHash = await keyHashOf(request);
  const inWorkspace = request.params.workspaceId !== undefined;
  const { recordId, workspaceId } = inWorkspace
    ? tenantPathIds(request.params, context.tenant.id, 'workspaceId', 'recordId')
    : { ...tenantPathIds(request.params, context.tenant.id, 'recordId'), workspaceId: undefined };
  const expand = expandParam(new URL(request.url).searchParams);
  const { caller, records, objects } = await cached.readableRecord(keyHash, recordId, workspaceId);
  if (caller === undefined) throw unauthorized();
  const record = records.get(recordId);
  const access = record === undefined ? undefined : recordAccess(caller, record, workspaceId);
  if (record === undefined || access?.read !== true) throw notFound('Record');
  // Fields hidden from the caller are not in the answer (lookups included), and expand cannot name them.
  const [looked] = await withLookupValues(context, caller, [record], objects);
  const shown = withoutHidden(looked ?? record, access.fields.hidden);
  if (expand === undefined) return recordResponse(shown);
  const def = objects.get(record.objectId);
  const seen = def === undefined ? [] : [visibleDef(def, access.fields)];
  const problems = expandProblems(expand, seen, () => ({ query: 'expand' }));
  if (problems.length > 0) throw invalidQuery(problems);
  const [expanded] = await withExpanded(context, caller, [shown], expand);
  return recordResponse(expanded ?? shown);
}
