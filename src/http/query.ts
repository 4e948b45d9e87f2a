import type { InputProblem } from '../core/problem.ts';

export interface Query {
  params: URLSearchParams;
  problems: InputProblem[];
}

const HEX2 = /^[0-9A-Fa-f]{2}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();

/**
 * application/x-www-form-urlencoded decoding as URLSearchParams does it (`+` is a space, a `%`
 * not followed by two hex digits stays as it is), but undefined when the bytes are not UTF-8.
 */
export function formDecode(text: string): string | undefined {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '%' && HEX2.test(text.slice(i + 1, i + 3))) {
      bytes.push(parseInt(text.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (c === '+') bytes.push(0x20);
    else bytes.push(...encoder.encode(c));
  }
  try {
    return utf8.decode(new Uint8Array(bytes));
  } catch {
    return undefined;
  }
}

/**
 * The query string of `url` as URLSearchParams would read it, except that a name or value whose
 * percent-encoding is not UTF-8 (`%ED%A0%80`, `%FF`) is a problem naming that parameter instead of
 * being decoded to U+FFFD and searched for. A parameter with such a name is named as sent.
 */
export function queryOf(url: string): Query {
  const search = new URL(url).search.slice(1);
  const params = new URLSearchParams();
  const problems: InputProblem[] = [];
  for (const pair of search === '' ? [] : search.split('&')) {
    if (pair === '') continue;
    const at = pair.indexOf('=');
    const [rawName, rawValue] = at < 0 ? [pair, ''] : [pair.slice(0, at), pair.slice(at + 1)];
    const name = formDecode(rawName);
    const value = formDecode(rawValue);
    if (name === undefined || value === undefined) {
      problems.push({
        query: name ?? rawName,
        code: 'invalid_encoding',
        message: 'not valid UTF-8 once percent-decoded',
      });
    } else params.append(name, value);
  }
  return { params, problems };
}
