import { characters } from '../core/characters.ts';
import type { InputProblem } from '../core/problem.ts';

/**
 * Files on records, as plain data: what an upload's name may be, how a download is offered to a
 * browser, which bytes a `Range` asks for, and whether an `If-None-Match` names the file.
 */

/** The longest file name, in characters. */
export const MAX_FILE_NAME = 255;
/** The largest upload in one request: what a Worker may receive. */
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;
/** An upload no record holds is removed this long after it was uploaded or let go. */
export const FREE_FILE_TTL_MS = 24 * 60 * 60 * 1000;

// C0 and C1 control characters, and DEL.
// eslint-disable-next-line no-control-regex -- refusing control characters is the point.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** Why `name` cannot name a file (at the query parameter `name`), or undefined when it can. */
export function fileNameProblem(name: string | undefined): InputProblem | undefined {
  const at = { query: 'name' };
  if (name === undefined || name === '') return { ...at, code: 'required', message: 'expected the name of the file' };
  if (characters(name) > MAX_FILE_NAME)
    return { ...at, code: 'too_long', message: `expected at most ${MAX_FILE_NAME} characters` };
  if (name.includes('/') || CONTROL.test(name))
    return { ...at, code: 'invalid_value', message: 'expected no "/" and no control characters' };
  return undefined;
}

/** Shown in place (under a sandbox): images but SVG (a document that runs scripts), PDF and plain text. */
export function shownInline(contentType: string): boolean {
  const type = (contentType.split(';')[0] ?? '').trim().toLowerCase();
  if (type === 'image/svg+xml') return false;
  return type.startsWith('image/') || type === 'application/pdf' || type === 'text/plain';
}

/** The `Content-Disposition` of a download: in place for what a browser shows safely, else an attachment. */
export function contentDisposition(name: string, contentType: string): string {
  const ascii = name.replace(/[^\u0020-\u007e]|["\\]/gu, '_');
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${shownInline(contentType) ? 'inline' : 'attachment'}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** The bytes a `Range` header asks for: all of them, a part, or none it could have (416). */
export type RangeAsked = { kind: 'all' } | { kind: 'part'; offset: number; length: number } | { kind: 'none' };

/**
 * One `bytes=` range of a file of `size` bytes (RFC 9110): `a-b`, `a-` or `-n`. A header that is
 * not one such range (several ranges, another unit, nonsense) is ignored, as the RFC allows: the
 * whole file. A range that starts past the end cannot be satisfied.
 */
export function rangeOf(header: string | null, size: number): RangeAsked {
  if (header === null) return { kind: 'all' };
  const m = /^bytes=(\d{0,16})-(\d{0,16})$/.exec(header.trim());
  if (m === null || (m[1] === '' && m[2] === '')) return { kind: 'all' };
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return { kind: 'none' };
    const length = Math.min(suffix, size);
    return { kind: 'part', offset: size - length, length };
  }
  const first = Number(m[1]);
  const last = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (first >= size) return { kind: 'none' };
  if (last < first) return { kind: 'all' };
  return { kind: 'part', offset: first, length: last - first + 1 };
}

/** Whether an `If-None-Match` header names the file whose entity tag is `etag` (or any, `*`). */
export function noneMatch(header: string | null, etag: string): boolean {
  if (header === null) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

/** A file's entity tag: its SHA-256, quoted. */
export const etagOf = (sha256: string): string => `"${sha256}"`;

/**
 * Where a tenant's file lies in R2: one prefix per tenant, so a deleted tenant's files go by prefix.
 * An upload in parts is known by its id from its start; an upload in one request by a random name
 * (its id is taken as its row is kept, in the same round trip). A row names its file's key.
 */
export const fileKey = (tenantId: number, fileId: number): string => `files/${tenantId}/${fileId}`;
export const uploadKey = (tenantId: number, random: string): string => `files/${tenantId}/u-${random}`;
export const tenantFilesPrefix = (tenantId: number): string => `files/${tenantId}/`;

/** The smallest part of a multipart upload but the last: R2's floor. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** The largest file, sent in parts. */
export const MAX_FILE_BYTES = 5 * 1024 * 1024 * 1024;
/** Parts of one upload at most (R2's limit). */
export const MAX_PARTS = 10_000;

/**
 * Why a part may not join an upload whose parts so far have `sizes`, or undefined. Parts go up in
 * order, each the size of the first (at least 5 MiB) but the last, which may be smaller: a part
 * after a smaller one (a part too small to be anything but the last) or larger than the first is
 * refused, as R2 would refuse the whole upload at its end.
 */
export function partProblem(sizes: readonly number[], partNumber: number, length: number): InputProblem | undefined {
  const at = { parameter: 'partNumber', status: 422 };
  if (partNumber !== sizes.length + 1)
    return { ...at, code: 'part_out_of_order', message: `expected part ${sizes.length + 1}: parts go up in order` };
  const first = sizes[0];
  const previous = sizes.at(-1);
  if (first === undefined || previous === undefined) return undefined;
  if (previous < MIN_PART_BYTES || previous < first)
    return {
      ...at,
      code: 'part_too_small',
      message: `part ${sizes.length} has ${previous} bytes: every part but the last has ${first}, at least 5 MiB`,
    };
  if (length > first)
    return { ...at, code: 'part_too_large', message: `expected at most ${first} bytes, the size of part 1` };
  return undefined;
}
