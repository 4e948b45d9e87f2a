import { HttpError, invalidBody } from './errors.ts';
import { unstorableJson } from '../core/json.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const tooLarge = (): HttpError =>
  new HttpError(413, 'payload_too_large', 'Request body is too large', `The limit is ${MAX_BODY_BYTES} bytes.`);

/**
 * Reads a JSON body: 415 unless Content-Type is application/json, 413 past 1 MiB, 400 when it is
 * not UTF-8, not JSON, or holds what could not be stored as sent (CONTRACT §1).
 */
export async function readJson(request: Request): Promise<unknown> {
  const type = request.headers.get('Content-Type') ?? '';
  if (type.split(';')[0]?.trim().toLowerCase() !== 'application/json') {
    throw new HttpError(415, 'unsupported_media_type', 'Unsupported media type', 'Send Content-Type: application/json.');
  }
  const declared = Number(request.headers.get('Content-Length') ?? '0');
  if (declared > MAX_BODY_BYTES) throw tooLarge();
  let text: string;
  try {
    // A replacement character would silently stand in for a bad byte: refuse instead.
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(await readCapped(request));
  } catch (error) {
    if (error instanceof HttpError) throw error;
    throw new HttpError(400, 'invalid_request', 'Malformed body', 'The request body is not valid UTF-8.');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // The parser's message quotes the input: never echo it.
    throw new HttpError(400, 'invalid_request', 'Malformed JSON', 'The request body is not valid JSON.');
  }
  const problems = unstorableJson(value);
  if (problems.length > 0) throw invalidBody(problems);
  return value;
}

/** Reads at most MAX_BODY_BYTES, whatever Content-Length claimed (chunked bodies have none). */
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
  const all = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    all.set(chunk, at);
    at += chunk.byteLength;
  }
  return all;
}
