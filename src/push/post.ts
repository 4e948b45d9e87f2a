/** One attempt to deliver, as the delivery log keeps it. */
export interface Attempt {
  /** The item's feed cursor (its `webhook-id`). */
  cursor: string;
  /** When the attempt started, epoch ms. */
  at: number;
  /** The receiver's HTTP status; null when none came (timeout, network error). */
  status: number | null;
  durationMs: number;
  /** Why it failed (null on a 2xx): the error, or the start of the receiver's answer. */
  error: string | null;
}

export const DELIVERY_TIMEOUT_MS = 10_000;
/** The most of a receiver's answer that is read, for the log. */
export const MAX_ANSWER_BYTES = 4096;

/** Reads at most MAX_ANSWER_BYTES of a body, then lets the rest go unread. */
async function answerStart(response: Response): Promise<string> {
  if (response.body === null) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < MAX_ANSWER_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(Math.min(size, MAX_ANSWER_BYTES));
  let offset = 0;
  for (const chunk of chunks) {
    const part = chunk.subarray(0, bytes.byteLength - offset);
    bytes.set(part, offset);
    offset += part.byteLength;
  }
  return new TextDecoder().decode(bytes);
}

/** POSTs one signed item; never throws. A 2xx is success; anything else is a failure to retry. */
export async function postItem(
  url: string,
  headers: Record<string, string>,
  body: string,
  cursor: string,
  now: () => number = Date.now,
): Promise<Attempt> {
  const at = now();
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'User-Agent': 'record-service-webhooks', ...headers },
      body,
      redirect: 'manual',
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    const text = await answerStart(response).catch(() => '');
    const ok = response.status >= 200 && response.status < 300;
    return {
      cursor,
      at,
      status: response.status,
      durationMs: now() - at,
      error: ok ? null : `HTTP ${response.status}${text === '' ? '' : `: ${text.slice(0, 200)}`}`,
    };
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
    return {
      cursor,
      at,
      status: null,
      durationMs: now() - at,
      error: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : 'network error',
    };
  }
}
