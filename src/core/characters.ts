/**
 * Length in Unicode code points: what every length bound of the service counts, as JSON Schema's
 * `maxLength` and SQLite's length() do (a surrogate pair is one character; a lone half is one).
 */
export function characters(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/**
 * The least text past every text that starts with `prefix`, in code point order (SQLite's binary
 * order of UTF-8): its last code point raised by one (past the surrogates), or, for the greatest
 * code point, the text before it raised. None when every code point is the greatest: no text is
 * past those. A value starts with `prefix` exactly when `prefix <= value < pastPrefix(prefix)`.
 */
export function pastPrefix(prefix: string): string | undefined {
  const points = [...prefix].map((c) => c.codePointAt(0) as number);
  while (points.length > 0) {
    const last = (points.pop() as number) + 1;
    if (last <= 0x10ffff) return String.fromCodePoint(...points, last === 0xd800 ? 0xe000 : last);
  }
  return undefined;
}
