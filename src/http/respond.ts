/** A JSON answer. */
export function json(data: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(data), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

/**
 * The workspaces of the records a write's answer carries, kept beside it for what runs after it
 * has left (webhook wake-ups), so nothing parses its body again.
 */
export const answeredWorkspaces = new WeakMap<Response, readonly number[]>();

/** An answer that carries one record: with its version as a strong ETag, `"<version>"`. */
export function recordResponse(record: { version: number }): Response {
  return json(record, 200, { ETag: `"${record.version}"` });
}
