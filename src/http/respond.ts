/** A JSON answer. */
export function json(data: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(data), {
    status,
    headers: { 'Content-Type': 'application/json', ...headers },
  });
}

/**
 * The records an answer carries, kept beside it for what runs after it has left (webhook
 * wake-ups), so nothing parses its body again.
 */
export const answeredRecords = new WeakMap<Response, readonly { sharedWorkspaceIds?: readonly number[] }[]>();

/** An answer that carries one record: with its version as a strong ETag, `"<version>"`. */
export function recordResponse(record: { version: number; sharedWorkspaceIds?: readonly number[] }): Response {
  const response = json(record, 200, { ETag: `"${record.version}"` });
  answeredRecords.set(response, [record]);
  return response;
}
