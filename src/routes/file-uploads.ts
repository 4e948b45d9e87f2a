import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { fileKey, fileNameProblem, MAX_FILE_BYTES, MAX_PARTS, MAX_UPLOAD_BYTES, partProblem } from '../domain/files.ts';
import { tenantOfId } from '../domain/tenant.ts';
import { keyHashOf } from '../http/auth.ts';
import { forbidden, HttpError, invalidPath, invalidQuery, notFound, rejected, unauthorized } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { queryOf } from '../http/query.ts';
import { json } from '../http/respond.ts';
import { BodyCutShort, sha256Of, streamPart } from '../storage/file-bytes.ts';
import { FileUploads, partsOf, type UploadRow } from '../storage/file-uploads.ts';
import { Files, type NewFile } from '../storage/files.ts';
import { canUpload } from '../domain/access.ts';
import { bodyLength, cutShort, fileOut, fileQuota, overQuota, tooLarge } from './files.ts';

/**
 * A file larger than one request takes goes up in parts through R2's multipart upload: started
 * with its name, sent a part at a time in order, then completed into a file like any upload (or
 * given up). Only the one who started an upload sees it; anyone else gets what a missing id gets.
 */

const uploadOut = (row: UploadRow): Record<string, unknown> => ({
  id: row.id,
  name: row.name,
  contentType: row.content_type,
  parts: partsOf(row).map(([partNumber, , size]) => ({ partNumber, size })),
  createdAt: row.created_at,
});

/** POST /workspaces/{workspaceId}/files/uploads?name=: an upload in parts, started. */
export async function startUpload(request: IRequest, context: Context): Promise<Response> {
  const keyHash = await keyHashOf(request);
  const { workspaceId } = tenantPathIds(request.params, context.tenant.id, 'workspaceId');
  const { caller } = await context.cached.createContext(keyHash, []);
  if (caller === undefined) throw unauthorized();
  const sent = queryOf(request.url);
  const name = sent.params.get('name') ?? undefined;
  const nameProblem = fileNameProblem(name);
  const problems = [...sent.problems, ...(nameProblem === undefined ? [] : [nameProblem])];
  if (problems.length > 0 || name === undefined) throw invalidQuery(problems);
  if (!caller.roles.has(workspaceId)) throw notFound('Workspace');
  if (!canUpload(caller, workspaceId)) throw forbidden('Uploading needs a role that creates or changes records here.');
  const files = new Files(context.primary, context.meter);
  const quota = fileQuota(context.env.FILE_QUOTA_BYTES);
  if (quota < Number.MAX_SAFE_INTEGER && (await files.tenantBytes(context.tenant.id)) >= quota) throw overQuota(quota);
  const id = await files.newId(context.tenant.id);
  const contentType = request.headers.get('Content-Type') || 'application/octet-stream';
  const upload = await context.env.FILES.createMultipartUpload(fileKey(context.tenant.id, id), {
    httpMetadata: { contentType },
  });
  const row = {
    id,
    upload_id: upload.uploadId,
    workspace_id: workspaceId,
    name,
    content_type: contentType,
    created_by: caller.userId,
    created_at: Date.now(),
  };
  try {
    await new FileUploads(context.primary, context.meter).insert(row);
  } catch (error) {
    await upload.abort().catch(() => undefined);
    throw error;
  }
  return json(uploadOut({ ...row, parts: '[]' }), 201, { Location: `/files/uploads/${id}` });
}

/** The caller's own upload named by the path; anyone else's, or none, is missing. */
async function ownUpload(request: IRequest, context: Context): Promise<{ row: UploadRow; uploads: FileUploads }> {
  const keyHash = await keyHashOf(request);
  const { uploadId } = tenantPathIds(request.params, context.tenant.id, 'uploadId');
  const uploads = new FileUploads(context.primary, context.meter);
  const [caller, row] = await Promise.all([context.cached.callerOf(keyHash), uploads.get(uploadId)]);
  if (caller === undefined) throw unauthorized();
  if (row === undefined || tenantOfId(row.id) !== context.tenant.id || row.created_by !== caller.userId)
    throw notFound('Upload');
  return { row, uploads };
}

/** The part number of the path: 1 to 10,000. */
function partNumberOf(request: IRequest): number {
  const text = request.params.partNumber ?? '';
  const n = /^[0-9]{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(n >= 1 && n <= MAX_PARTS))
    throw invalidPath([{ parameter: 'partNumber', code: 'invalid_value', message: `expected 1 to ${MAX_PARTS}` }]);
  return n;
}

/** PUT /files/uploads/{uploadId}/parts/{partNumber}: one part's bytes, in order. */
export async function uploadPart(request: IRequest, context: Context): Promise<Response> {
  const { row, uploads } = await ownUpload(request, context);
  const partNumber = partNumberOf(request);
  const { length, problem } = bodyLength(request);
  if (problem !== undefined) throw invalidQuery([problem]);
  if (length > MAX_UPLOAD_BYTES) throw tooLarge(`A part takes at most ${MAX_UPLOAD_BYTES} bytes.`);
  const parts = partsOf(row);
  const wrong = partProblem(
    parts.map(([, , size]) => size),
    partNumber,
    length,
  );
  if (wrong !== undefined) throw rejected([wrong]);
  const sent = parts.reduce((sum, [, , size]) => sum + size, 0);
  if (sent + length > MAX_FILE_BYTES) throw tooLarge(`A file takes at most ${MAX_FILE_BYTES} bytes.`);
  const quota = fileQuota(context.env.FILE_QUOTA_BYTES);
  const used = await new Files(context.primary, context.meter).tenantBytes(context.tenant.id);
  if (used + sent + length > quota) throw overQuota(quota);
  const upload = context.env.FILES.resumeMultipartUpload(fileKey(context.tenant.id, row.id), row.upload_id);
  const uploaded = await streamPart(upload, partNumber, request.body as ReadableStream<Uint8Array>, length).catch(
    (error: unknown) => {
      throw error instanceof BodyCutShort ? cutShort() : error;
    },
  );
  if (!(await uploads.addPart(row.id, [partNumber, uploaded.etag, length], parts.length)))
    throw new HttpError(409, { code: 'conflict', detail: `Part ${partNumber} was sent twice at once.` });
  return json({ partNumber, size: length });
}

/** POST /files/uploads/{uploadId}/complete: the parts joined into one file, answered as an upload is. */
export async function completeUpload(request: IRequest, context: Context): Promise<Response> {
  const { row, uploads } = await ownUpload(request, context);
  const parts = partsOf(row);
  if (parts.length === 0)
    throw rejected([{ parameter: 'uploadId', code: 'no_parts', message: 'expected at least one part', status: 422 }]);
  const key = fileKey(context.tenant.id, row.id);
  const upload = context.env.FILES.resumeMultipartUpload(key, row.upload_id);
  await upload.complete(parts.map(([partNumber, etag]) => ({ partNumber, etag })));
  const file: NewFile & { id: number } = {
    id: row.id,
    workspace_id: row.workspace_id,
    name: row.name,
    size: parts.reduce((sum, [, , size]) => sum + size, 0),
    content_type: row.content_type,
    sha256: await sha256Of(context.env.FILES, key),
    created_by: row.created_by,
    created_at: Date.now(),
    object_key: key,
  };
  const quota = fileQuota(context.env.FILE_QUOTA_BYTES);
  let kept: number | undefined;
  try {
    kept = await new Files(context.primary, context.meter).insert(context.tenant.id, file, quota, [
      uploads.done(row.id),
    ]);
  } catch (error) {
    await context.env.FILES.delete(key).catch(() => undefined);
    throw error;
  }
  if (kept === undefined) {
    await context.env.FILES.delete(key);
    await uploads.remove(row.id);
    throw overQuota(quota);
  }
  return json(fileOut(file), 201, { Location: `/files/${row.id}` });
}

/** DELETE /files/uploads/{uploadId}: given up, its parts removed from R2. */
export async function abortUpload(request: IRequest, context: Context): Promise<Response> {
  const { row, uploads } = await ownUpload(request, context);
  await context.env.FILES.resumeMultipartUpload(fileKey(context.tenant.id, row.id), row.upload_id).abort();
  await uploads.remove(row.id);
  return new Response(null, { status: 204 });
}
