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
  let imported = keys.get(secret);
  if (imported === undefined) {
    imported = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    keys.set(secret, imported);
  }
  const signature = await crypto.subtle.sign('HMAC', await imported, encoder.encode(message));
  return b64url(new Uint8Array(signature).slice(0, 16));
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
 * A cursor holding a keyset position (sort values and an id) rather than one number: base64url of
 * the position's JSON, a dot, and the tag over that JSON and `scope`. Read back only if it is
 * exactly the text this service would issue for that position and scope.
 */
export async function signPosition(secret: string, position: readonly unknown[], scope: string): Promise<string> {
  const text = JSON.stringify(position);
  const bytes = encoder.encode(text);
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  const head = btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replaceAll('=', '');
  return `${head}.${await tag(secret, `${text}.${scope}`)}`;
}

/**
 * The position a keyset cursor holds, or 400 naming `pointer` (a body property) when it is not one
 * this service issued for `scope`.
 */
/** Base64 characters of a position a cursor may hold: the longest value a sort may hold, encoded. */
const MAX_POSITION_CHARS = 600_000;

export async function readPosition(secret: string, cursor: string, scope: string, at: string): Promise<unknown[]> {
  const dot = cursor.indexOf('.');
  const head = dot < 0 ? '' : cursor.slice(0, dot);
  let position: unknown;
  // A position may hold a sort value as long as a text field's (100,000 characters): within a body's 1 MiB.
  if (head.length <= MAX_POSITION_CHARS && /^[A-Za-z0-9_-]+$/.test(head)) {
    try {
      const binary = atob(head.replaceAll('-', '+').replaceAll('_', '/'));
      position = JSON.parse(
        new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(
          Uint8Array.from(binary, (c) => c.charCodeAt(0)),
        ),
      );
    } catch {
      position = undefined;
    }
  }
  if (Array.isArray(position) && sameText(cursor, await signPosition(secret, position, scope))) return position;
  throw invalidCursor({
    pointer: at,
    code: 'invalid_cursor',
    message: 'not a cursor this service issued for this query',
  });
}
