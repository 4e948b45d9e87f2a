/**
 * Counts an import file's data rows from its bytes as they stream in, piece by piece, in the
 * little state a byte needs: so an import knows its `rows.total` from the start, without keeping
 * the file in memory or reading it twice. It counts exactly the rows the chunks read later (see
 * import-file.ts): an NDJSON line that holds more than JSON's whitespace (a byte-order mark before
 * the first taken off); a CSV record, by RFC 4180's quotes, that is not blank, less the header.
 * The bytes that matter (quotes, commas, line breaks, whitespace) are ASCII, which UTF-8 never uses
 * inside another character, so bytes that are not UTF-8 are counted as the reader counts them.
 */

const QUOTE = 0x22;
const COMMA = 0x2c;
const LF = 0x0a;
const CR = 0x0d;

export interface RowCounter {
  add(bytes: Uint8Array): void;
  /** The rows of everything added (call once, after the last piece). */
  total(): number;
}

export function rowCounter(format: 'ndjson' | 'csv'): RowCounter {
  return format === 'ndjson' ? ndjsonCounter() : csvCounter();
}

const BOM = [0xef, 0xbb, 0xbf];

/** Lines holding anything but spaces, tabs and carriage returns. */
function ndjsonCounter(): RowCounter {
  let rows = 0;
  let filled = false;
  // The file's first bytes, until it is known whether they are a byte-order mark (no content).
  let head: number[] | undefined = [];
  const step = (byte: number): void => {
    if (byte === LF) {
      if (filled) rows++;
      filled = false;
    } else if (byte !== 0x20 && byte !== 0x09 && byte !== CR) filled = true;
  };
  const endOfHead = (): void => {
    if (head !== undefined && !(head.length === 3 && head.every((byte, i) => byte === BOM[i]))) head.forEach(step);
    head = undefined;
  };
  return {
    add(bytes) {
      for (const byte of bytes) {
        if (head === undefined) step(byte);
        else {
          head.push(byte);
          if (head.length === 3 || byte !== BOM[head.length - 1]) endOfHead();
        }
      }
    },
    total() {
      endOfHead();
      return rows + (filled ? 1 : 0);
    },
  };
}

type CsvState = 'fresh' | 'unquoted' | 'quoted' | 'quoteInQuoted';

/**
 * Records by the reader's rules: a cell that starts with `"` is quoted (inside it a `""` is a
 * quote and line breaks are text); a record ends at LF or CRLF outside quotes (a lone CR is text);
 * a record of one empty cell is blank and no row; a quote left open at the end is a record.
 */
function csvCounter(): RowCounter {
  let records = 0;
  let state: CsvState = 'fresh';
  let content = false;
  let carriageReturn = false;
  const end = (): void => {
    if (content) records++;
    content = false;
    state = 'fresh';
  };
  const step = (byte: number): void => {
    if (carriageReturn) {
      carriageReturn = false;
      if (byte === LF) return end();
      // The CR was text of its cell.
      content = true;
      if (state === 'fresh') state = 'unquoted';
    }
    if (state === 'quoteInQuoted') {
      if (byte === QUOTE) {
        content = true;
        state = 'quoted';
        return;
      }
      state = 'unquoted';
    }
    if (state === 'quoted') {
      if (byte === QUOTE) state = 'quoteInQuoted';
      else content = true;
      return;
    }
    if (byte === COMMA) {
      content = true;
      state = 'fresh';
    } else if (byte === LF) end();
    else if (byte === CR) carriageReturn = true;
    else if (byte === QUOTE && state === 'fresh') state = 'quoted';
    else {
      content = true;
      state = 'unquoted';
    }
  };
  return {
    add(bytes) {
      for (const byte of bytes) step(byte);
    },
    total() {
      if (carriageReturn) content = true;
      if (content || state === 'quoted') records++;
      // The first record is the header.
      return Math.max(0, records - 1);
    },
  };
}
