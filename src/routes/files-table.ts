import { FileSchema } from '../schemas/files.ts';
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
      '413 past it, nothing kept.',
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
