import { HttpError } from './errors.ts';

/**
 * Opaque, tamper-evident cursors: base64url of `<position>.<scope>` followed by an HMAC-SHA256
 * tag (16 bytes) over both. `scope` binds a cursor to what it walks (the workspace and the
 * filters), so a cursor taken from one list cannot be used on another, and an edited one is
 * refused. The key is the CURSOR_SECRET secret, else ADMIN_TOKEN, else a fixed local-only key
 * (documented: set one of the secrets in production, or cursors are merely checksummed).
 */

const LOCAL_KEY = 'record-service-local-cursor-key';

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
}

function fromB64url(text: string): Uint8Array | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined;
  try {
    return Uint8Array.from(atob(text.replaceAll('-', '+').replaceAll('_', '/')), (c) => c.charCodeAt(0));
  } catch {
    return undefined;
  }
}

/** Imported once per isolate and secret: importing costs more than signing. */
const keys = new Map<string, Promise<CryptoKey>>();

async function tag(secret: string, message: string): Promise<Uint8Array> {
  let imported = keys.get(secret);
  if (imported === undefined) {
    imported = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    keys.set(secret, imported);
  }
  const key = await imported;
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(message))).slice(0, 16);
}

export function cursorSecret(env: { CURSOR_SECRET?: string; ADMIN_TOKEN?: string }): string {
  return env.CURSOR_SECRET || env.ADMIN_TOKEN || LOCAL_KEY;
}

export async function signCursor(secret: string, position: number, scope: string): Promise<string> {
  const message = `${position}.${scope}`;
  return `${b64url(new TextEncoder().encode(String(position)))}.${b64url(await tag(secret, message))}`;
}

/** The position a cursor holds, or 400 naming `parameter` when it was forged, edited or is for another scope. */
export async function readCursor(secret: string, cursor: string, scope: string, parameter: string): Promise<number> {
  const [head, sent, ...rest] = cursor.split('.');
  const position = head === undefined ? undefined : Number(new TextDecoder().decode(fromB64url(head) ?? new Uint8Array()));
  const given = sent === undefined ? undefined : fromB64url(sent);
  if (rest.length === 0 && position !== undefined && Number.isSafeInteger(position) && position >= 0 && given !== undefined) {
    const expected = await tag(secret, `${position}.${scope}`);
    if (given.length === expected.length && crypto.subtle.timingSafeEqual(given, expected)) return position;
  }
  throw new HttpError(400, 'invalid_request', 'Invalid cursor', 'The cursor was not issued for this request.', [
    { query: parameter, code: 'invalid_cursor', message: 'not a cursor this service issued for this query' },
  ]);
}
