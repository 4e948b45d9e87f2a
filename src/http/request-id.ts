const VISIBLE_ASCII = /^[\x21-\x7e]{1,128}$/;

/** The caller's X-Request-Id when it is safe to echo, else a fresh one. */
export function requestIdOf(request: Request): string {
  const sent = request.headers.get('X-Request-Id');
  return sent !== null && VISIBLE_ASCII.test(sent) ? sent : crypto.randomUUID();
}
