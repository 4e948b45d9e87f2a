import { describe, expect, it } from 'vitest';
import { canDownload, canUpload, type Caller } from '../../src/domain/access.ts';
import {
  contentDisposition,
  fileNameProblem,
  noneMatch,
  partProblem,
  rangeOf,
  shownInline,
} from '../../src/domain/files.ts';

describe('file names', () => {
  it('takes 1 to 255 characters without "/" or control characters', () => {
    expect(fileNameProblem('report (final).pdf')).toBeUndefined();
    expect(fileNameProblem('語'.repeat(255))).toBeUndefined();
    expect(fileNameProblem('😀'.repeat(255))).toBeUndefined();
    expect(fileNameProblem(undefined)?.code).toBe('required');
    expect(fileNameProblem('')?.code).toBe('required');
    expect(fileNameProblem('a'.repeat(256))?.code).toBe('too_long');
    for (const bad of ['a/b', '/', 'a\u0000', 'a\nb', 'a\u001fb', 'a\u007fb', 'a\u0085b'])
      expect(fileNameProblem(bad), JSON.stringify(bad)).toEqual({
        query: 'name',
        code: 'invalid_value',
        message: 'expected no "/" and no control characters',
      });
  });
});

describe('content disposition', () => {
  it('shows images (not SVG), PDF and plain text in place; the rest is an attachment', () => {
    for (const type of ['image/png', 'IMAGE/JPEG', 'application/pdf', 'text/plain; charset=utf-8'])
      expect(shownInline(type), type).toBe(true);
    for (const type of ['image/svg+xml', 'text/html', 'application/octet-stream', 'text/javascript', ''])
      expect(shownInline(type), type).toBe(false);
  });

  it('names the file in ASCII and in UTF-8, with nothing that could end the header value', () => {
    expect(contentDisposition('a "b"\\.txt', 'text/html')).toBe(
      `attachment; filename="a _b__.txt"; filename*=UTF-8''a%20%22b%22%5C.txt`,
    );
    expect(contentDisposition("naïve's.png", 'image/png')).toBe(
      `inline; filename="na_ve's.png"; filename*=UTF-8''na%C3%AFve%27s.png`,
    );
  });
});

describe('ranges', () => {
  it('reads one bytes= range; ignores what it cannot read; refuses a start past the end', () => {
    expect(rangeOf(null, 100)).toEqual({ kind: 'all' });
    expect(rangeOf('bytes=0-9', 100)).toEqual({ kind: 'part', offset: 0, length: 10 });
    expect(rangeOf('bytes=90-', 100)).toEqual({ kind: 'part', offset: 90, length: 10 });
    expect(rangeOf('bytes=90-500', 100)).toEqual({ kind: 'part', offset: 90, length: 10 });
    expect(rangeOf('bytes=-5', 100)).toEqual({ kind: 'part', offset: 95, length: 5 });
    expect(rangeOf('bytes=-500', 100)).toEqual({ kind: 'part', offset: 0, length: 100 });
    expect(rangeOf('bytes=100-', 100)).toEqual({ kind: 'none' });
    expect(rangeOf('bytes=-0', 100)).toEqual({ kind: 'none' });
    for (const ignored of ['bytes=0-1,5-6', 'items=0-1', 'bytes=5-2', 'bytes=-', 'nonsense'])
      expect(rangeOf(ignored, 100), ignored).toEqual({ kind: 'all' });
  });

  it('If-None-Match names the file by its tag, weak or strong, in a list, or *', () => {
    expect(noneMatch('"abc"', '"abc"')).toBe(true);
    expect(noneMatch('"x", W/"abc"', '"abc"')).toBe(true);
    expect(noneMatch('*', '"abc"')).toBe(true);
    expect(noneMatch('"abcd"', '"abc"')).toBe(false);
    expect(noneMatch(null, '"abc"')).toBe(false);
  });
});

describe('parts of an upload', () => {
  const MiB = 1024 * 1024;
  it('go in order, each the size of the first (at least 5 MiB) but the last, which may be smaller', () => {
    expect(partProblem([], 1, 10)).toBeUndefined();
    expect(partProblem([6 * MiB], 2, 6 * MiB)).toBeUndefined();
    expect(partProblem([6 * MiB, 6 * MiB], 3, 1)).toBeUndefined();
    expect(partProblem([], 2, 10)?.code).toBe('part_out_of_order');
    expect(partProblem([6 * MiB], 1, 10)?.code).toBe('part_out_of_order');
    expect(partProblem([6 * MiB], 3, 10)?.code).toBe('part_out_of_order');
    expect(partProblem([5 * MiB - 1], 2, 10)?.code).toBe('part_too_small');
    expect(partProblem([6 * MiB, 1], 3, 1)?.code).toBe('part_too_small');
    expect(partProblem([6 * MiB], 2, 6 * MiB + 1)).toEqual({
      parameter: 'partNumber',
      status: 422,
      code: 'part_too_large',
      message: `expected at most ${6 * MiB} bytes, the size of part 1`,
    });
  });
});

describe('who may upload and download a file', () => {
  const role = {
    id: 9,
    objects: [
      {
        objectId: 1,
        read: true,
        create: false,
        update: false,
        delete: false,
        rows: 'own' as const,
        fields: { scan: 'hidden' as const },
      },
    ],
  };
  const caller = (roles: Caller['roles']): Caller => ({ userId: 7, roles });
  const held = (fields: string[], ownedBy = 7, deleted = false) => ({
    uploadedBy: 3,
    record: { place: { objectId: 1, ownedBy, sharedWorkspaceIds: [5] }, deleted, fields },
  });

  it('uploads: an editor, or a role that creates or changes records there', () => {
    expect(canUpload(caller(new Map([[5, 'editor']])), 5)).toBe(true);
    expect(canUpload(caller(new Map([[5, 'viewer']])), 5)).toBe(false);
    expect(canUpload(caller(new Map([[5, role]])), 5)).toBe(false);
    expect(canUpload(caller(new Map([[5, 'editor']])), 6)).toBe(false);
  });

  it('downloads: a reader of the live record in a field they see; while no record holds it, its uploader', () => {
    const viewer = caller(new Map([[5, 'viewer']]));
    expect(canDownload(viewer, held(['doc']))).toBe(true);
    expect(canDownload(viewer, held(['doc'], 7, true))).toBe(false);
    expect(canDownload(caller(new Map([[6, 'editor']])), held(['doc']))).toBe(false);
    const limited = caller(new Map([[5, role]]));
    expect(canDownload(limited, held(['doc']))).toBe(true);
    expect(canDownload(limited, held(['scan']))).toBe(false);
    expect(canDownload(limited, held(['scan', 'doc']))).toBe(true);
    expect(canDownload(limited, held(['doc'], 8))).toBe(false);
    expect(canDownload(viewer, { uploadedBy: 7 })).toBe(true);
    expect(canDownload(viewer, { uploadedBy: 3 })).toBe(false);
  });
});
