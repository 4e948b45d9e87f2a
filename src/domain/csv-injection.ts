/**
 * CSV injection (OWASP): a spreadsheet runs a cell that starts with `=`, `+`, `-`, `@`, a tab or
 * a carriage return as a formula (`=HYPERLINK(…)` sends data away when clicked). An export
 * neutralises such a cell with a leading `'`, which spreadsheets show as text; an import takes
 * that `'` off again, so a value goes out and comes back exactly as it was.
 *
 * The two are inverses on every string: a cell that starts with `'`s and then one of those
 * characters gains one more `'` on the way out and loses one on the way in; no other cell is
 * touched (a number as JSON writes it, `-12.5`, is no formula and stays as it is).
 */

const FORMULA = /^'*[=+\-@\t\r]/;
const NEUTRALISED = /^'+[=+\-@\t\r]/;
const NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/** A cell as an export writes it: one a spreadsheet would run as a formula, with a `'` before it. */
export const neutralised = (cell: string): string => (FORMULA.test(cell) && !NUMBER.test(cell) ? `'${cell}` : cell);

/** A cell as an import reads it: the `'` an export put before a formula taken off. */
export const restored = (cell: string): string => (NEUTRALISED.test(cell) ? cell.slice(1) : cell);
