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
