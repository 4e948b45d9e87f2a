import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rowCounter } from '../../src/domain/import-count.ts';
import { csvChunk, ndjsonRows } from '../../src/domain/import-file.ts';
import { blankRecord, csvRecords } from '../../src/domain/import-rows.ts';
import type { ObjectDef } from '../../src/domain/object-def.ts';

const DEF: ObjectDef = { id: 1, version: 1, name: 'T', workspaceIds: [1], fields: [{ name: 'a', type: 'text' }] };
const encoder = new TextEncoder();

/**
 * The rows the chunks read from `bytes`, a chunk after another, as an import applies it; undefined
 * for a CSV file whose first record is blank (refused whole: it has no header).
 */
function rowsRead(format: 'ndjson' | 'csv', bytes: Uint8Array): number | undefined {
  let position = 0;
  if (format === 'csv') {
    const text = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes);
    const { records, consumed } = csvRecords(text, true, 1);
    // No header, or one that is not UTF-8 (the alphabet below holds no U+FFFD of its own): refused whole.
    const header = text.slice(0, consumed);
    if (records[0] === undefined || blankRecord(records[0]) || header.includes('\uFFFD')) return undefined;
    position = encoder.encode(text.slice(0, consumed)).byteLength;
  }
  let processed = 0;
  while (position < bytes.byteLength) {
    const piece = bytes.subarray(position);
    const read =
      format === 'ndjson'
        ? ndjsonRows(piece, true, 100, { position, processed }, 'create')
        : csvChunk(piece, true, 100, { position, processed }, DEF, ['a'], 'create');
    processed += read.rows.length;
    if (read.to === position) break;
    position = read.to;
  }
  return processed;
}

/** The rows counted from `bytes` given in pieces cut at `cuts`. */
function counted(format: 'ndjson' | 'csv', bytes: Uint8Array, cuts: readonly number[]): number {
  const counter = rowCounter(format);
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    const to = Math.min(cut, bytes.byteLength);
    if (to > from) counter.add(bytes.subarray(from, to));
    from = Math.max(from, to);
  }
  counter.add(bytes.subarray(from));
  return counter.total();
}

const pieces = (units: readonly string[]) =>
  fc.array(fc.constantFrom(...units), { maxLength: 60 }).map((parts) => encoder.encode(parts.join('')));
const withBytes = (bytes: fc.Arbitrary<Uint8Array>) =>
  fc.tuple(bytes, fc.boolean(), fc.boolean()).map(([body, bom, bad]) => {
    const out = [...(bom ? [0xef, 0xbb, 0xbf] : []), ...body];
    if (bad && out.length > 0) out.splice(out.length >> 1, 0, 0xff);
    return Uint8Array.from(out);
  });

describe('rowCounter: the rows of a file, counted as its bytes stream by', () => {
  it('counts what an NDJSON import reads: lines with more than whitespace', () => {
    expect(counted('ndjson', encoder.encode('{"a":1}\n\n  \r\n{"b":2}'), [])).toBe(2);
    expect(counted('ndjson', encoder.encode('\uFEFF\n{}\n'), [1, 2])).toBe(1);
    const file = withBytes(pieces(['{}', '\n', '\r\n', ' ', '\t', 'x', '\u00a0', '\uFEFF', 'é']));
    fc.assert(
      fc.property(file, fc.array(fc.nat(80), { maxLength: 6 }), (bytes, cuts) => {
        expect(counted('ndjson', bytes, cuts)).toBe(rowsRead('ndjson', bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it('counts what a CSV import reads: records by their quotes, less blank ones and the header', () => {
    expect(counted('csv', encoder.encode('a\r\n"x\r\ny"\r\n\r\n""\r\nz'), [])).toBe(2);
    expect(counted('csv', encoder.encode('a\n"open'), [3])).toBe(1);
    const file = withBytes(pieces(['a', 'é', ',', '"', '""', '\n', '\r\n', '\r', ' ', ';']));
    fc.assert(
      fc.property(file, fc.array(fc.nat(80), { maxLength: 6 }), (bytes, cuts) => {
        const read = rowsRead('csv', bytes);
        fc.pre(read !== undefined);
        expect(counted('csv', bytes, cuts)).toBe(read);
      }),
      { numRuns: 3000 },
    );
  });
});
