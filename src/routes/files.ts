import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { canDownload, canUpload, type FileHolder } from '../domain/access.ts';
import {
  contentDisposition,
  etagOf,
  fileNameProblem,
  MAX_UPLOAD_BYTES,
  noneMatch,
  rangeOf,
  uploadKey,
} from '../domain/files.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { keyHashOf } from '../http/auth.ts';
import { forbidden, HttpError, invalidQuery, notFound, unauthorized, type InputProblem } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { Files, type FileHeld, type NewFile } from '../storage/files.ts';
import { BodyCutShort, streamUpload } from '../storage/file-bytes.ts';

/**
 * Files of records: `POST /workspaces/{id}/files?name=` streams the body into R2 and keeps its row;
 * `GET /files/{id}` streams it back to whoever may read a live record holding it (or uploaded it,
 * while no record holds it). Anyone else gets what a missing id gets.
 */

export const tooLarge = (detail: string): HttpError => new HttpError(413, { code: 'payload_too_large', detail });

/** The tenant's cap on its files' bytes (`FILE_QUOTA_BYTES`); unset or not a number: no cap. */
export function fileQuota(setting: string | undefined): number {
  const quota = /^\s*[0-9]{1,16}\s*$/.test(setting ?? '') ? Number(setting) : NaN;
  return Number.isSafeInteger(quota) ? quota : Number.MAX_SAFE_INTEGER;
}

/** The body's declared length: required, and at least one byte. */
export function bodyLength(request: Request): { length: number; problem?: InputProblem } {
  const declared = request.headers.get('Content-Length') ?? '';
  const length = /^[0-9]{1,16}$/.test(declared) ? Number(declared) : NaN;
  if (!Number.isSafeInteger(length))
    return {
      length,
      problem: { header: 'Content-Length', code: 'required', message: 'expected the length of the body' },
    };
  if (length === 0 || request.body === null)
    return { length, problem: { header: 'Content-Length', code: 'empty', message: 'expected the bytes of the file' } };
  return { length };
}

/** The body ended before its length or ran past it: as the upload's problem. */
export const cutShort = (): HttpError =>
  invalidQuery([
    { header: 'Content-Length', code: 'invalid_value', message: 'the body ended before its length, or ran past it' },
  ]);

/** The file as an upload answers it. */
export const fileOut = (row: NewFile & { id: number }): Record<string, unknown> => ({
  id: row.id,
  name: row.name,
  size: row.size,
  contentType: row.content_type,
  sha256: row.sha256,
  createdAt: row.created_at,
});

/** POST /workspaces/{workspaceId}/files?name=: the body, streamed into R2 with its SHA-256. */
export async function uploadFile(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const { caller } = await context.cached.createContext(keyHash, []);
  if (caller === undefined) throw unauthorized();
  const sent = queryOf(request.url);
  const name = sent.params.get('name') ?? undefined;
  const nameProblem = fileNameProblem(name);
  const problems = [...sent.problems, ...(nameProblem === undefined ? [] : [nameProblem])];
  const { length, problem } = bodyLength(request);
  if (problem !== undefined) problems.push(problem);
  if (problems.length > 0 || name === undefined) throw invalidQuery(problems);
  if (length > MAX_UPLOAD_BYTES)
    throw tooLarge(`One request takes at most ${MAX_UPLOAD_BYTES} bytes; upload a larger file in parts.`);
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  if (!canUpload(caller, workspaceId)) throw forbidden('Uploading needs a role that creates or changes records here.');

  const files = new Files(context.primary, context.meter);
  const quota = fileQuota(context.env.FILE_QUOTA_BYTES);
  // With a cap, a file that would pass it is refused before its bytes are read (and checked again as kept).
  if (quota < Number.MAX_SAFE_INTEGER && (await files.tenantBytes(context.tenant.id)) + length > quota)
    throw overQuota(quota);
  const key = uploadKey(context.tenant.id, crypto.randomUUID());
  const contentType = request.headers.get('Content-Type') || 'application/octet-stream';
  const sha256 = await streamUpload(context.env.FILES, key, request.body as ReadableStream<Uint8Array>, length, {
    contentType,
  }).catch((error: unknown) => {
    throw error instanceof BodyCutShort ? cutShort() : error;
  });
  const row: NewFile = {
    workspace_id: workspaceId,
    name,
    size: length,
    content_type: contentType,
    sha256,
    created_by: caller.userId,
    created_at: Date.now(),
    object_key: key,
  };
  let id: number | undefined;
  try {
    id = await files.insert(context.tenant.id, row, quota);
  } catch (error) {
    await context.env.FILES.delete(key).catch(() => undefined);
    throw error;
  }
  if (id === undefined) {
    await context.env.FILES.delete(key);
    throw overQuota(quota);
  }
  return json(fileOut({ ...row, id }), 201, { Location: `/files/${id}` });
}

export const overQuota = (quota: number): HttpError =>
  tooLarge(`The tenant's files may take at most ${quota} bytes (FILE_QUOTA_BYTES); this one would pass it.`);

/** A file's row as the access layer decides on it. */
function holderOf(file: FileHeld): FileHolder {
  if (file.record_id === null || file.object_id === null) return { uploadedBy: file.created_by };
  return {
    uploadedBy: file.created_by,
    record: {
      place: {
        objectId: file.object_id,
        ownedBy: file.owned_by,
        sharedWorkspaceIds: JSON.parse(file.shared ?? '[]') as number[],
      },
      deleted: file.deleted !== 0,
      fields: JSON.parse(file.fields ?? '[]') as string[],
    },
  };
}

/** GET /files/{fileId}: the bytes, with their entity tag, a range, or 304 for a tag the caller holds. */
export async function downloadFile(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { fileId } = tenantPathIds(request.params, context.tenant.id, 'fileId');
  const [caller, file] = await Promise.all([
    context.cached.callerOf(keyHash),
    new Files(context.reads, context.meter).held(fileId),
  ]);
  if (caller === undefined) throw unauthorized();
  if (file === undefined || tenantOfId(file.id) !== context.tenant.id || !canDownload(caller, holderOf(file)))
    throw notFound('File');
  const etag = etagOf(file.sha256);
  const headers: Record<string, string> = {
    ETag: etag,
    'Cache-Control': 'private, no-cache',
    'Content-Security-Policy': 'sandbox',
    'Content-Disposition': contentDisposition(file.name, file.content_type),
    'Accept-Ranges': 'bytes',
  };
  if (noneMatch(request.headers.get('If-None-Match'), etag)) return new Response(null, { status: 304, headers });
  const range = rangeOf(request.headers.get('Range'), file.size);
  if (range.kind === 'none')
    throw new HttpError(416, {
      code: 'range_not_satisfiable',
      detail: `The file has ${file.size} bytes.`,
      headers: { 'Content-Range': `bytes */${file.size}` },
    });
  const object = await context.env.FILES.get(
    file.object_key,
    range.kind === 'part' ? { range: { offset: range.offset, length: range.length } } : {},
  );
  if (object === null) throw notFound('File');
  headers['Content-Type'] = file.content_type;
  if (range.kind === 'part') {
    headers['Content-Range'] = `bytes ${range.offset}-${range.offset + range.length - 1}/${file.size}`;
    headers['Content-Length'] = String(range.length);
    return new Response(object.body, { status: 206, headers });
  }
  headers['Content-Length'] = String(file.size);
  return new Response(object.body, { status: 200, headers });
}
