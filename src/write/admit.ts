import type { IRequest } from 'itty-router';
import * as v from 'valibot';
import type { Context } from '../context.ts';
import { caught, type Caught } from '../core/caught.ts';
import { newWriteId } from '../core/ledger.ts';
import { NO_ACCESS, recordAccess } from '../domain/access.ts';
import { patchProblems } from '../domain/patch.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { invalidBody, rejected, unauthorized, type InputProblem } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { MAX_BATCH } from '../schemas/common.ts';
import {
  duplicateProblems,
  fieldValueDuplicates,
  parseBatch,
  parseObject,
  pointer,
  type Parsed,
} from '../schemas/parse.ts';
import { CreateItem, PatchBody, PatchItem, UpsertBody, type PatchIn } from '../schemas/record.ts';
import { keyHeader } from './claim.ts';
import type { Write, WriteCall, WorkerRead } from './write.ts';

/**
 * The Worker's own checks of a write, in the order answers are owed: the caller's key (401),
 * the body's shape and the Idempotency-Key header (one 400 listing both), and for a write of one
 * record that the caller may see it (404, with no object call: a record the caller cannot see
 * costs what a missing one costs). What passes becomes a WriteCall for the engine.
 */

/** Delete and restore take no body: none at all, or `{}`. */
export const EmptyBody = v.strictObject({});

/** The body's shape and the Idempotency-Key header together: one 400 lists every problem of both. */
function wellShaped<T>(body: Caught<unknown>, parsed: Parsed<T> | undefined, keyProblems: InputProblem[]): T {
  if (!body.ok) throw body.error;
  if (parsed?.ok !== true || keyProblems.length > 0)
    throw invalidBody([...(parsed?.ok === false ? parsed.problems : []), ...keyProblems]);
  return parsed.value;
}

function callOf(context: Context, request: Request, keyHash: string, write: Write, read?: WorkerRead): WriteCall {
  const { key } = keyHeader(request);
  return {
    id: newWriteId(context.tenant.id),
    requestId: context.requestId,
    tenant: context.tenant,
    write,
    keyHash,
    ...(key === undefined ? {} : { key }),
    ...(read === undefined ? {} : { read }),
  };
}

/** The caller must be known: remembered by this isolate, else read (with `objectIds`' definitions). */
async function knownCaller(
  context: Context,
  keyHash: string,
  objectIds: readonly number[] = [],
): Promise<WorkerRead | undefined> {
  if (objectIds.length === 0 && context.cached.knowsCaller(keyHash)) return undefined;
  const read = await context.cached.createContext(keyHash, objectIds);
  if (read.caller === undefined) throw unauthorized();
  return read.remembered ? undefined : { caller: read.caller, objects: [...read.objects.values()], records: [] };
}

/** POST /records/batch. */
export async function admitCreate(request: Request, context: Context): Promise<WriteCall> {
  const keyHash = await keyHashOf(request);
  const body = await caught(() => readJson(request));
  const parsed = body.ok
    ? parseBatch(CreateItem, body.value, (items) =>
        items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))),
      )
    : undefined;
  const objectIds = parsed?.ok === true ? [...new Set(parsed.value.map((item) => item.objectId))] : [];
  const read = await knownCaller(context, keyHash, objectIds);
  const items = wellShaped(body, parsed, keyHeader(request).problems);
  return callOf(context, request, keyHash, { kind: 'create', items }, read);
}

/** PATCH /workspaces/{workspaceId}/records/{recordId}, and the delete and restore of one record. */
export async function admitPatch(
  request: IRequest,
  context: Context,
  action?: 'delete' | 'restore',
): Promise<WriteCall> {
  const keyHash = await keyHashOf(request);
  const { workspaceId, recordId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId', 'recordId');
  const body = await caught(() => (action === undefined ? readJson(request) : emptyBody(request)));
  const parsed = body.ok ? parseObject(PatchBody, body.value, (input) => fieldValueDuplicates(input, '')) : undefined;
  const ifMatch = request.headers.get('If-Match') ?? undefined;
  const write = (patch: PatchIn): Write => ({
    kind: 'patch',
    recordId,
    workspaceId,
    patch,
    ...(action === undefined ? {} : { action }),
    ...(ifMatch === undefined ? {} : { ifMatch }),
  });
  if (context.cached.seesRecord(keyHash, recordId, workspaceId))
    return callOf(context, request, keyHash, write(wellShaped(body, parsed, keyHeader(request).problems)));
  // Memory does not say the caller sees the record: read it if the caller may, and refuse it here otherwise
  // (a record the caller cannot see is not read at all: it costs what a missing one costs).
  const { caller, records, objects } = await context.cached.readableRecord(keyHash, recordId, workspaceId);
  if (caller === undefined) throw unauthorized();
  const patch = wellShaped(body, parsed, keyHeader(request).problems);
  const record = records.get(recordId);
  if (record === undefined || !recordAccess(caller, record, workspaceId).read)
    throw rejected(patchProblems(undefined, NO_ACCESS, undefined, patch, ''));
  return callOf(context, request, keyHash, write(patch), { caller, objects: [...objects.values()], records: [record] });
}

async function emptyBody(request: Request): Promise<Record<string, never>> {
  if (request.body === null || request.headers.get('Content-Length') === '0') return {};
  const parsed = parseObject(EmptyBody, await readJson(request));
  if (!parsed.ok) throw invalidBody(parsed.problems);
  return {};
}

/** PATCH .../records/batch, with a workspace in the path or without. */
export async function admitBatch(request: IRequest, context: Context): Promise<WriteCall> {
  const keyHash = await keyHashOf(request);
  const workspaceId =
    request.params.workspaceId === undefined
      ? undefined
      : tenantPathIds(request.params, context.tenant.id, 'workspaceId').workspaceId;
  const body = await caught(() => readJson(request));
  const parsed = body.ok
    ? parseBatch(PatchItem, body.value, (items) => [
        ...duplicateProblems(items, 'id', ''),
        ...items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', i))),
      ])
    : undefined;
  await knownCaller(context, keyHash);
  const items = wellShaped(body, parsed, keyHeader(request).problems);
  return callOf(context, request, keyHash, {
    kind: 'batch',
    items,
    ...(workspaceId === undefined ? {} : { workspaceId }),
  });
}

/** Shape problems Valibot cannot find: the number of items (checked first), fieldNames given twice. */
function upsertExtra(input: unknown): InputProblem[] {
  const items = (input as { items?: unknown } | null)?.items;
  if (!Array.isArray(items)) return [];
  if (items.length < 1 || items.length > MAX_BATCH)
    return [{ pointer: '/items', code: 'invalid_length', message: `expected 1 to ${MAX_BATCH} items` }];
  return items.flatMap((item, i) => fieldValueDuplicates(item, pointer('', 'items', i)));
}

/** POST /objects/{objectId}/records/upsert. */
export async function admitUpsert(request: IRequest, context: Context): Promise<WriteCall> {
  const keyHash = await keyHashOf(request);
  const { objectId } = tenantPathIds(request.params, context.tenant.id, 'objectId');
  const body = await caught(() => readJson(request));
  const parsed = body.ok ? parseObject(UpsertBody, body.value, upsertExtra) : undefined;
  await knownCaller(context, keyHash);
  const upsert = wellShaped(body, parsed, keyHeader(request).problems);
  return callOf(context, request, keyHash, { kind: 'upsert', objectId, body: upsert });
}
