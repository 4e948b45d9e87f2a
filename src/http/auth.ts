import { adminUnauthorized, HttpError, unauthorized } from './errors.ts';

const BEARER = /^Bearer[ ]+([\x21-\x7e]{1,512})$/i;

/** The bearer token of a request, or 401. */
export function bearerToken(request: Request): string {
  const match = BEARER.exec(request.headers.get('Authorization') ?? '');
  if (match?.[1] === undefined) throw unauthorized();
  return match[1];
}

const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/** Lower-case hex SHA-256: how API keys are stored and looked up. */
export async function sha256Hex(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  let hex = '';
  for (const byte of digest) hex += HEX[byte] as string;
  return hex;
}

/** Hashes of the keys this isolate met lately: a key's hash never changes, and every request needs it. */
const keyHashes = new Map<string, string>();
const KEY_HASHES = 1_000;

/** The SHA-256 (hex) of the request's bearer token, or 401: how its API key is looked up. */
export async function keyHashOf(request: Request): Promise<string> {
  const token = bearerToken(request);
  const known = keyHashes.get(token);
  if (known !== undefined) return known;
  const hash = await sha256Hex(token);
  if (keyHashes.size >= KEY_HASHES) keyHashes.clear();
  keyHashes.set(token, hash);
  return hash;
}

/** How much of a key is kept in clear to recognise it in a list: `rk_` and 7 characters. */
export const KEY_PREFIX_LENGTH = 10;

/** Bytes as unpadded base64url. */
export const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replaceAll('+', '-')
    .replaceAll('/', '_')
    .replaceAll('=', '');

/**
 * The API key an admin write issues: `start` (`rk_`, or `rk<tenant>_` for a tenant of its own:
 * leaked keys are greppable, and a key names its tenant) and the base64url HMAC-SHA256 of its
 * write id under `secret` (the admin token). Only its hash is stored; the write's ledger row keeps
 * the answer without it, and a retry or a replay of the write computes the same key again.
 */
export async function derivedApiKey(secret: string, writeId: string, start = 'rk_'): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`api-key\n${writeId}`));
  return start + base64url(new Uint8Array(mac));
}

/** The admin API's answer when no admin token is configured and no tenant administrator's key was sent. */
export const adminDisabled = (): HttpError =>
  new HttpError(503, {
    code: 'unavailable',
    title: 'Admin API disabled',
    detail: 'The ADMIN_TOKEN secret is not set; set it to enable the admin API.',
  });

/** Whether an admin token is configured. */
export const hasAdminToken = (adminToken: string | undefined): adminToken is string =>
  adminToken !== undefined && adminToken !== '';

/** Whether the request's bearer is the admin token; 503 when no token is configured, 401 without a bearer. */
export async function isAdminToken(request: Request, adminToken: string | undefined): Promise<boolean> {
  if (!hasAdminToken(adminToken)) throw adminDisabled();
  const sent = BEARER.exec(request.headers.get('Authorization') ?? '')?.[1];
  if (sent === undefined) throw adminUnauthorized();
  // Compare digests so the comparison takes the same time whatever the lengths.
  const [a, b] = await Promise.all([sha256Hex(sent), sha256Hex(adminToken)]);
  const enc = new TextEncoder();
  return crypto.subtle.timingSafeEqual(enc.encode(a), enc.encode(b));
}
