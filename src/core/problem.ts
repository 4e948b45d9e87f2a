/**
 * The pure core's vocabulary for a problem with one input. It stands below everything else so
 * that the domain, the schemas and HTTP can all speak it without depending on each other.
 */
export interface InputProblem {
  /** RFC 6901 pointer into the request body. */
  pointer?: string;
  /** A path parameter, a header or a query parameter, when the problem is not in the body. */
  parameter?: string;
  header?: string;
  query?: string;
  /** The column (CSV) or field (NDJSON) a problem of an imported row is in, beside its pointer into the row. */
  column?: string;
  /** The value an imported row's problem is about, as text, at most 200 characters. */
  value?: string;
  /** A record the problem names (one that references the record a delete was refused for). */
  recordId?: number;
  /** A formula's expression: where in it (0-based, in UTF-16 code units) the problem is. */
  position?: number;
  code: string;
  message: string;
  /** Present when this problem alone would answer another status than the response's. */
  status?: number;
}

/** RFC 6901 pointer of a path below `prefix`. */
export function pointer(prefix: string, ...keys: readonly (string | number)[]): string {
  return prefix + keys.map((k) => '/' + String(k).replaceAll('~', '~0').replaceAll('/', '~1')).join('');
}
