import { FileSchema, PartSchema, UploadSchema } from '../schemas/files.ts';
import { abortUpload, completeUpload, startUpload, uploadPart } from './file-uploads.ts';
import { downloadFile, uploadFile } from './files.ts';
import type { Operation } from './operation.ts';

/** Files of records: uploaded into a workspace, put in a record's file field, downloaded by its readers. */
export const fileOperations = {
  uploadFile: {
    method: 'POST',
    path: '/workspaces/:workspaceId/files',
    handler: uploadFile,
    operationId: 'uploadFile',
    tag: 'Records',
    summary: 'Upload a file',
    description:
      'The body is the bytes (any `Content-Type`, with its `Content-Length`: 1 byte to 100 MB), streamed into R2 ' +
      "with their SHA-256. A member whose role creates or changes records in the workspace. Put the answer's `id`, " +
      '`name`, `size` and `contentType` in a file field of a record (the uploader only, within 24 h: a file no ' +
      "record holds is removed 24 h after its upload). The tenant's files may take at most `FILE_QUOTA_BYTES`: " +
      '413 past it, nothing kept. No `Idempotency-Key`: a file sent again is another file.',
    auth: 'key',
    fileBody: { 'application/octet-stream': 'the bytes of the file' },
    ok: { status: 201, schema: FileSchema, location: true },
    query: [
      {
        name: 'name',
        required: true,
        description: 'The file\'s name (required): 1–255 characters, no "/", no control characters.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ],
    errors: [403, 413],
  },
  startUpload: {
    method: 'POST',
    path: '/workspaces/:workspaceId/files/uploads',
    handler: startUpload,
    operationId: 'startUpload',
    tag: 'Records',
    summary: 'Start uploading a large file in parts',
    description:
      "For a file past 100 MB (up to 5 GB): R2's multipart upload. No body; its `Content-Type` header is the " +
      "file's. Send the parts in order with `PUT /files/uploads/{id}/parts/{n}`, then `POST " +
      '/files/uploads/{id}/complete`. Who may upload as for `POST /workspaces/{workspaceId}/files`. An upload not ' +
      'completed within 24 h is given up.',
    auth: 'key',
    bodyOptional: true,
    ok: { status: 201, schema: UploadSchema, location: true },
    query: [
      {
        name: 'name',
        required: true,
        description: 'The file\'s name (required): 1–255 characters, no "/", no control characters.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      },
    ],
    errors: [403, 413],
  },
  uploadPart: {
    method: 'PUT',
    path: '/files/uploads/:uploadId/parts/:partNumber',
    handler: uploadPart,
    operationId: 'uploadPart',
    tag: 'Records',
    summary: 'Send one part of a file',
    description:
      'The body is the part (with its `Content-Length`, up to 100 MB). Parts go in order from 1; every part but the ' +
      'last has the size of part 1, at least 5 MiB; the last may be smaller. A part out of order, after a smaller ' +
      "one, or larger than part 1: 422 at `partNumber`. Past 5 GB in all or the tenant's `FILE_QUOTA_BYTES`: 413. " +
      'The uploader only; anyone else: 404.',
    auth: 'key',
    fileBody: { 'application/octet-stream': 'the bytes of the part' },
    ok: { status: 200, schema: PartSchema },
    errors: [409, 413, 422],
  },
  completeUpload: {
    method: 'POST',
    path: '/files/uploads/:uploadId/complete',
    handler: completeUpload,
    operationId: 'completeUpload',
    tag: 'Records',
    summary: 'Join the parts into the file',
    description:
      'No body. The parts become one file, answered as `POST /workspaces/{workspaceId}/files` answers (its SHA-256 ' +
      'read back from R2). No part yet: 422. The uploader only; anyone else: 404.',
    auth: 'key',
    bodyOptional: true,
    ok: { status: 201, schema: FileSchema, location: true },
    errors: [413, 422],
  },
  abortUpload: {
    method: 'DELETE',
    path: '/files/uploads/:uploadId',
    handler: abortUpload,
    operationId: 'abortUpload',
    tag: 'Records',
    summary: 'Give up an upload in parts',
    description: 'Its parts are removed from R2. The uploader only; anyone else: 404.',
    auth: 'key',
    ok: { status: 204 },
    errors: [],
  },
  downloadFile: {
    method: 'GET',
    path: '/files/:fileId',
    handler: downloadFile,
    operationId: 'downloadFile',
    tag: 'Records',
    summary: 'Download a file',
    description:
      'Whoever may read a live record holding the file in a field they see (or its uploader, while no record ' +
      'holds it); anyone else gets 404, as for an id never issued. Streamed from R2 with `ETag` (its SHA-256), ' +
      '`Range` (206; 416 past the end), `If-None-Match` (304), `X-Content-Type-Options: nosniff`, ' +
      '`Content-Security-Policy: sandbox` and `Content-Disposition: attachment` unless it is an image (not SVG), a ' +
      'PDF or plain text (`inline`).',
    auth: 'key',
    ok: { status: 200 },
    fileAnswer: { 'application/octet-stream': 'the bytes of the file' },
    errors: [416],
  },
} satisfies Record<string, Operation>;
