import type { IRequest } from 'itty-router';
import type { Context } from '../context.ts';
import { HttpError } from '../http/errors.ts';
import { json } from '../http/respond.ts';

/** GET /health: 200 when D1 answers; 503 otherwise. No key needed. */
export async function health(_request: IRequest, { store }: Context): Promise<Response> {
  try {
    if (await store.ping()) return json({ status: 'ok' });
  } catch {
    // Reported below as unavailable: the cause is D1's, not the caller's.
  }
  throw new HttpError(503, {
    code: 'unavailable',
    title: 'Storage unreachable',
    detail: 'D1 did not answer.',
    headers: {
      'Retry-After': '5',
    },
  });
}
