import * as moves from './moves.ts';
import { MoveInput, Move } from '../schemas/admin.ts';
import type { Operation } from './operation.ts';

/** The operator's moves of a tenant to another database. */
export const moveOperations = {
  moveTenant: {
    method: 'POST',
    path: '/tenants/:tenantId/move',
    handler: moves.startMove,
    operationId: 'moveTenant',
    tag: 'Tenants',
    summary: 'Move a tenant to another database',
    description:
      'Copies its rows to `database` while it reads and writes as usual, then switches: its writes are held for ' +
      'that moment (503 with `Retry-After`, nothing written) and its reads never fail. Ids, versions, the feed ' +
      '(cursors go on), keys, webhooks and imports carry over; nothing of it is left on the old database. ' +
      'Follow `Location`. One move of a tenant at a time; the default tenant and a move to the database it is ' +
      'on: 409.',
    auth: 'operator',
    idempotencyKey: true,
    body: MoveInput,
    ok: { status: 202, schema: Move, location: true },
    errors: [409],
  },
  getMove: {
    method: 'GET',
    path: '/tenants/:tenantId/moves/:moveId',
    handler: moves.getMove,
    operationId: 'getMove',
    tag: 'Tenants',
    summary: 'Read a move',
    description: 'Where the move stands and how many rows it has copied.',
    auth: 'operator',
    ok: { status: 200, schema: Move },
    errors: [],
  },
  cancelMove: {
    method: 'DELETE',
    path: '/tenants/:tenantId/moves/:moveId',
    handler: moves.cancelMove,
    operationId: 'cancelMove',
    tag: 'Tenants',
    summary: 'Cancel a move',
    description:
      'Before it switches: nothing changes (the partial copy leaves the new database in the background) and the ' +
      'move is `cancelled`; cancelling again answers the same. Once it switched or ended otherwise: 409.',
    auth: 'operator',
    idempotencyKey: true,
    ok: { status: 200, schema: Move },
    errors: [409],
  },
} satisfies Record<string, Operation>;
