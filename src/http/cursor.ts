import { HttpError, invalidCursor } from './errors.ts';

/**
 * Opaque, tamper-evident cursors: base64url of the position's decimal digits, a dot, and an
 * HMAC-SHA256 tag (16 bytes, base64url) over the position and `scope`. `scope` binds a cursor to
 * what it walks (the workspace and the filters), so a cursor taken from one list cannot be used
 * on another. Every position has exactly one cursor text: a cursor is accepted only if it equals,
 * character for character, the one this service would issue (`01`, ` 1`, `+1`, `1.0` or an edited
 * last character of the tag are all refused). The key is the caller's to choose (see cursorKey):
 * never ADMIN_TOKEN, never a fixed text.
 */

function b64url(bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replaceAll('=', '');
}

const encoder = new TextEncoder();

/** Imported once per isolate and secret: importing costs more than signing. */
const keys = new Map<string, Promise<CryptoKey>>();

async function tag(secret: string, message: string): Promise<string> {
  return b64url((await mac(secret, message)).slice(0, 16));
}

export async function signCursor(secret: string, position: number, scope: string): Promise<string> {
  return `${b64url(encoder.encode(String(position)))}.${await tag(secret, `${position}.${scope}`)}`;
}

const HEAD = /^[A-Za-z0-9_-]{1,24}$/;
const POSITION = /^(0|[1-9][0-9]{0,15})$/;

function positionOf(head: string): number | undefined {
  if (!HEAD.test(head)) return undefined;
  let text: string;
  try {
    text = atob(head.replaceAll('-', '+').replaceAll('_', '/'));
  } catch {
    return undefined;
  }
  const position = POSITION.test(text) ? Number(text) : undefined;
  return position !== undefined && Number.isSafeInteger(position) ? position : undefined;
}

/** Equality whose time depends on the lengths only, not on where the texts differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

/** The position a cursor holds, or 400 naming `parameter` when it was forged, edited or is for another scope. */
export async function readCursor(secret: string, cursor: string, scope: string, parameter: string): Promise<number> {
  const dot = cursor.indexOf('.');
  const position = dot < 0 ? undefined : positionOf(cursor.slice(0, dot));
  if (position !== undefined) {
    if (sameText(cursor, await signCursor(secret, position, scope))) return position;
  }
  throw new HttpError(400, {
    code: 'invalid_request',
    title: 'Invalid cursor',
    detail: 'The cursor was not issued for this request.',
    errors: [{ query: parameter, code: 'invalid_cursor', message: 'not a cursor this service issued for this query' }],
  });
}

/** The key cursors are signed with: the CURSOR_SECRET secret when set, else the one kept in storage. */
export async function cursorKey(secret: string | undefined, stored: () => Promise<string>): Promise<string> {
  return secret !== undefined && secret !== '' ? secret : stored();
}

/**
 * A cursor holding a keyset position (sort values and an id) rather than one number, sealed: the
 * position's JSON encrypted with AES-GCM under a key derived from the secret, `scope` as its
 * additional data, and an IV taken from the HMAC of the position and scope, so each position has
 * exactly one cursor text. Its holder cannot read it: a position may name a record or a sort value
 * the caller was never shown (where a walk stopped, among records a role hides).
 */
export async function signPosition(secret: string, position: readonly unknown[], scope: string): Promise<string> {
  const text = JSON.stringify(position);
  const iv = (await mac(secret, `${text}.${scope}`)).slice(0, 12);
  const sealed = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: encoder.encode(scope) },
    await sealingKey(secret),
    encoder.encode(text),
  );
  const bytes = new Uint8Array(12 + sealed.byteLength);
  bytes.set(iv);
  bytes.set(new Uint8Array(sealed), 12);
  return b64urlLong(bytes);
}

/** Base64 characters of a position a cursor may hold: the longest value a sort may hold, encoded. */
const MAX_POSITION_CHARS = 600_000;

/**
 * The position a keyset cursor holds, or 400 naming `at` (a body property, or a query parameter
 * for a GET) when it is not one this service issued for `scope`.
 */
export async function readPosition(secret: string, cursor: string, scope: string, at: string): Promise<unknown[]> {
  let position: unknown;
  // A position may hold a sort value as long as a text field's (100,000 characters): within a body's 1 MiB.
  if (cursor.length <= MAX_POSITION_CHARS && /^[A-Za-z0-9_-]{40,}$/.test(cursor)) {
    try {
      const binary = atob(cursor.replaceAll('-', '+').replaceAll('_', '/'));
      const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
      const opened = await crypto.subtle.decrypt(
        { name: 'AES-GCM', iv: bytes.slice(0, 12), additionalData: encoder.encode(scope) },
        await sealingKey(secret),
        bytes.slice(12),
      );
      position = JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(opened));
    } catch {
      position = undefined;
    }
  }
  if (Array.isArray(position) && sameText(cursor, await signPosition(secret, position, scope))) return position;
  throw invalidCursor({
    ...(at.startsWith('/') ? { pointer: at } : { query: at }),
    code: 'invalid_cursor',
    message: 'not a cursor this service issued for this query',
  });
}

/** The HMAC-SHA256 of `message` under `secret`, whole. */
async function mac(secret: string, message: string): Promise<Uint8Array> {
  let imported = keys.get(secret);
  if (imported === undefined) {
    imported = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    keys.set(secret, imported);
  }
  return new Uint8Array(await crypto.subtle.sign('HMAC', await imported, encoder.encode(message)));
}

/** The AES-GCM key positions are sealed with: the HMAC of a fixed label under the secret (one key per secret). */
const sealingKeys = new Map<string, Promise<CryptoKey>>();
function sealingKey(secret: string): Promise<CryptoKey> {
  let key = sealingKeys.get(secret);
  if (key === undefined) {
    key = mac(secret, 'record-service cursor positions').then((raw) =>
      crypto.subtle.importKey('raw', raw, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']),
    );
    sealingKeys.set(secret, key);
  }
  return key;
}

/** Base64url of bytes too many to spread into one call. */
function b64urlLong(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
}
