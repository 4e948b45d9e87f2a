import * as v from 'valibot';
import { Id } from './common.ts';

/** A file as its upload answers it; a record holds `id`, `name`, `size` and `contentType` of it. */
export const FileSchema = v.strictObject({
  id: Id,
  name: v.pipe(v.string(), v.description('As the upload named it: 1–255 characters, no "/", no control characters.')),
  size: v.pipe(Id, v.description('Bytes.')),
  contentType: v.pipe(v.string(), v.description("The upload's Content-Type (application/octet-stream without one).")),
  sha256: v.pipe(v.string(), v.description("The SHA-256 of the bytes, in hex: the download's ETag.")),
  createdAt: Id,
});

/** A file going up in parts, as its uploader follows it. */
export const UploadSchema = v.strictObject({
  id: v.pipe(Id, v.description('The upload, and the id its file will have.')),
  name: FileSchema.entries.name,
  contentType: FileSchema.entries.contentType,
  parts: v.array(v.strictObject({ partNumber: Id, size: Id })),
  createdAt: Id,
});

/** A part as R2 now holds it. */
export const PartSchema = v.strictObject({ partNumber: Id, size: Id });
