import { blankRecord, csvRecords, csvRow, isBlankLine, ndjsonRow, type RowRead } from './import-rows.ts';
import type { ColumnMap, ImportMode } from './imports.ts';
import type { ObjectDef } from './object-def.ts';

/**
 * The rows of a piece of an import file, from its bytes: whole NDJSON lines or CSV records only
 * (a row cut by the piece's end waits for the next piece), each with its number in the file and
 * where it ends, so a chunk knows the position its rows take the import to. Plain data, no I/O.
 */

/** A row of a chunk: its number in the file (1-based), where it ends in the file, and what it holds. */
export interface Row {
  number: number;
  end: number;
  read: RowRead;
}

/** Where a piece starts in the file, and how many rows came before it. */
export interface PieceStart {
  position: number;
  processed: number;
}

/** Bytes of rows a chunk takes at most (past one row): what one D1 transaction carries stays bounded. */
export const CHUNK_BYTES = 2 * 1024 * 1024;

/** Keeps a U+FEFF as it is: a row's bytes and characters count alike (a file's own mark comes before its rows). */
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const lenient = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

export function ndjsonRows(
  bytes: Uint8Array,
  atEnd: boolean,
  max: number,
  state: PieceStart,
  mode: ImportMode,
  map?: ColumnMap,
): { rows: Row[]; to: number } {
  const rows: Row[] = [];
  let start = 0;
  while (rows.length < max && start < bytes.length && !(rows.length > 0 && start >= CHUNK_BYTES)) {
    let end = bytes.indexOf(0x0a, start);
    if (end < 0) {
      if (!atEnd) break;
      end = bytes.length;
    }
    const line = bytes.subarray(start, end);
    start = end + 1;
    let text: string;
    try {
      text = decoder.decode(line);
    } catch {
      rows.push(failedRow(rows.length, state, start, 'invalid_encoding', 'the line is not UTF-8'));
      continue;
    }
    // The file's first line may start with a byte-order mark.
    if (state.position === 0 && line.byteOffset === bytes.byteOffset) text = text.replace(/^\uFEFF/, '');
    if (isBlankLine(text)) continue;
    rows.push({
      number: state.processed + rows.length + 1,
      end: state.position + Math.min(start, bytes.length),
      read: ndjsonRow(text, mode, map),
    });
  }
  return { rows, to: state.position + Math.min(start, bytes.length) };
}

function failedRow(index: number, state: PieceStart, end: number, code: string, message: string): Row {
  return {
    number: state.processed + index + 1,
    end: state.position + end,
    read: { ok: false, problems: [{ pointer: '', code, message }] },
  };
}

export function csvChunk(
  bytes: Uint8Array,
  atEnd: boolean,
  max: number,
  state: PieceStart,
  def: ObjectDef,
  columns: readonly (string | null)[],
  mode: ImportMode,
): { rows: Row[]; to: number } {
  // Decoded line by line: a record ends at a line's end, so each record's bytes are those of its
  // lines, and a line that is not UTF-8 fails only the record it is in.
  const cut = atEnd ? bytes.length : bytes.lastIndexOf(0x0a) + 1;
  const byteAt = new Map<number, number>([[0, 0]]);
  const bad: [number, number][] = [];
  let text = '';
  for (let from = 0; from < cut;) {
    const newline = bytes.indexOf(0x0a, from);
    const to = newline < 0 || newline >= cut ? cut : newline + 1;
    const line = bytes.subarray(from, to);
    let decoded: string;
    try {
      decoded = decoder.decode(line);
    } catch {
      decoded = lenient.decode(line);
      bad.push([text.length, text.length + decoded.length]);
    }
    text += decoded;
    from = to;
    byteAt.set(text.length, to);
  }
  const rows: Row[] = [];
  let at = 0;
  while (rows.length < max && !(rows.length > 0 && (byteAt.get(at) ?? 0) >= CHUNK_BYTES)) {
    const { records, consumed } = csvRecords(text.slice(at), atEnd, 1);
    const record = records[0];
    const end = byteAt.get(at + consumed);
    if (record === undefined || end === undefined) break;
    const encoded = !bad.some(([a, b]) => a < at + consumed && b > at);
    const number = state.processed + rows.length + 1;
    at += consumed;
    if (encoded && blankRecord(record)) continue;
    rows.push({
      number,
      end: state.position + end,
      read: encoded
        ? csvRow(record, columns, def, mode)
        : { ok: false, problems: [{ pointer: '', code: 'invalid_encoding', message: 'the record is not UTF-8' }] },
    });
  }
  return { rows, to: state.position + (byteAt.get(at) ?? 0) };
}
