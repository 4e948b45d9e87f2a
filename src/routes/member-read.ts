import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { caught } from '../core/caught.ts';
import { isLimited, type Caller } from '../domain/access.ts';
import type { ObjectDef } from '../domain/definition.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { notFound, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { Queries } from '../storage/query.ts';

/** What a member's read of a workspace's records (a query, an aggregate) is decided on. */
export interface MemberRead {
  workspaceId: number;
  caller: Caller;
  /** The definitions of the objects in view of the workspace. */
  objects: ObjectDef[];
  /** Per object, its indexed fields whose index is still being built. */
  building: Map<number, string[]>;
  body: unknown;
}

/**
 * The caller, the workspace's definitions and the body of a read posted to a workspace's records,
 * checked in the order every such read answers: an unknown key 401, a non-member 404 (who learns
 * nothing of the body), then the body's shape 400. One D1 round trip.
 */
export async function memberRead(request: IRequest, context: Context): Promise<MemberRead> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const body = await caught(() => readJson(request));
  const { caller, objects, building } = await new Queries(context.reads, context.meter, context.tenant.id).view(
    keyHash,
    workspaceId,
  );
  if (caller === undefined) throw unauthorized();
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  // The rows a read counts include the records a role passes over: its answer does not tell them.
  if (isLimited(caller)) context.meter.hideRows();
  if (!body.ok) throw body.error;
  return { workspaceId, caller, objects, building, body: body.value };
}
