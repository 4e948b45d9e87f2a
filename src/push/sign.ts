/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` and the
 * base64 of the key's bytes; a delivery carries `webhook-id`, `webhook-timestamp` (Unix seconds)
 * and `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>`.
 */

const PREFIX = 'whsec_';
const encoder = new TextEncoder();

const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

/** A fresh secret: 24 random bytes. */
export function newWebhookSecret(): string {
  return `${PREFIX}${base64(crypto.getRandomValues(new Uint8Array(24)))}`;
}

function keyBytes(secret: string): Uint8Array {
  const text = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  return Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
}

/** The three headers of one attempt to deliver `body` as message `id` at `timestamp` (seconds). */
export async function webhookHeaders(
  secret: string,
  id: string,
  timestamp: number,
  body: string,
): Promise<Record<string, string>> {
  const key = await crypto.subtle.importKey('raw', keyBytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    'sign',
  ]);
  const mac = await crypto.subtle.sign('HMAC', key, encoder.encode(`${id}.${timestamp}.${body}`));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': `v1,${base64(new Uint8Array(mac))}`,
  };
}

/**
 * The secret of the subscription made by write `writeId`: HMAC-SHA256 of the write id under the
 * service's key (24 of its bytes, as a fresh one has). A create stores it in the subscription's
 * row and nowhere else; an answer repeated after a lost reply or replayed for its Idempotency-Key
 * derives it again, so the write ledger never holds it. A replay after the service's key was
 * rotated shows a secret the subscription does not sign with.
 */
export async function derivedWebhookSecret(serviceKey: string, writeId: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    'raw',
    encoder.encode(serviceKey),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = await crypto.subtle.sign('HMAC', key, encoder.encode(`webhook-secret\n${writeId}`));
  return `${PREFIX}${base64(new Uint8Array(mac).slice(0, 24))}`;
}
