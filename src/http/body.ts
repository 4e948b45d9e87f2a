import { HttpError, invalidBody } from './errors.ts';
import { concatBytes } from '../core/bytes.ts';
import { parseStrictJson } from '../core/json-scan.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (): HttpError =>
  new HttpError(413, {
    code: 'payload_too_large',
    title: 'Request body is too large',
    detail: `The limit is ${MAX_BODY_BYTES} bytes.`,
  });

const unsupported = (): HttpError =>
  new HttpError(415, {
    code: 'unsupported_media_type',
    title: 'Unsupported media type',
    detail: 'Send Content-Type: application/json (UTF-8).',
  });

const malformed = (): HttpError =>
  new HttpError(400, {
    code: 'invalid_request',
    title: 'Malformed JSON',
    detail: 'The request body is not valid JSON.',
  });

/**
 * Whether a Content-Type names JSON in UTF-8: `application/json`, with any parameters, but a
 * `charset` only if it is utf-8 (any case, quoted or not).
 */
export function isJsonUtf8(type: string): boolean {
  const [media, ...params] = type.split(';');
  if (media?.trim().toLowerCase() !== 'application/json') return false;
  return params.every((param) => {
    const at = param.indexOf('=');
    if (
      param
        .slice(0, at < 0 ? undefined : at)
        .trim()
        .toLowerCase() !== 'charset'
    )
      return true;
    const value = param
      .slice(at + 1)
      .trim()
      .replace(/^"(.*)"$/, '$1');
    return at >= 0 && value.toLowerCase() === 'utf-8';
  });
}

/**
 * Reads a JSON body: 415 unless Content-Type is application/json in UTF-8, 413 past 1 MiB, 400
 * when it is not UTF-8, not JSON, nested deeper than 100 levels, or holds what could not be
 * stored as sent: a repeated member name, a number no double holds as written, a lone surrogate.
 * The depth is checked on the text, before any code walks the value.
 */
export async function readJson(request: Request): Promise<unknown> {
  if (!isJsonUtf8(request.headers.get('Content-Type') ?? '')) throw unsupported();
  const declared = Number(request.headers.get('Content-Length') ?? '0');
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  let text: string;
  try {
    // A replacement character would silently stand in for a bad byte: refuse instead.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(await readCapped(request));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, {
      code: 'invalid_request',
      title: 'Malformed body',
      detail: 'The request body is not valid UTF-8.',
    });
  }
  // The parser's message would quote the input: a malformed body is answered without it.
  const parsed = parseStrictJson(text);
  if (parsed.ok) return parsed.value;
  throw parsed.malformed ? malformed() : invalidBody(parsed.problems);
}

/**
 * Reads at most MAX_BODY_BYTES, whatever Content-Length claimed (chunked bodies have none, and a
 * caller inside Cloudflare may send more than it declares).
 */
async function readCapped(request: Request): Promise<Uint8Array> {
  if (request.body === null) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(value);
  }
  return concatBytes(chunks);
}
