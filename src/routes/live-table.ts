import { LiveTicket } from '../schemas/lists.ts';
import { createLiveTicket, openLive } from './live.ts';
import type { Operation, QueryParameter } from './operation.ts';

const LIVE_QUERY: QueryParameter[] = [
  {
    name: 'after',
    description:
      'A cursor of the feed (of `GET /workspaces/{workspaceId}/changes` or of an item sent before): the stream ' +
      'starts after it, with no gap and no duplicate. A pruned one is 410, as on the feed.',
    schema: { type: 'string' },
  },
  {
    name: 'start',
    description:
      'Without `after`: `latest` (the default) sends only what commits next; `oldest` every kept change first.',
    schema: { type: 'string', enum: ['oldest', 'latest'] },
  },
  {
    name: 'ticket',
    description:
      'A ticket from `POST /workspaces/{workspaceId}/live/tickets`, where no Authorization header can be sent.',
    schema: { type: 'string' },
  },
];

const EXAMPLE_EVENT =
  'id: NDI.q1w2e3r4t5y6u7i8o9p0aa\n' +
  'data: {"cursor":"NDI.q1w2e3r4t5y6u7i8o9p0aa","type":"updated","at":1795392661008,"by":1,"recordId":7,' +
  '"version":3,"fieldValues":[{"fieldName":"stage","value":"won"}]}\n\n';

/** A workspace's changes pushed as they commit. */
export const liveOperations = {
  openLive: {
    method: 'GET',
    path: '/workspaces/:workspaceId/live',
    handler: openLive,
    operationId: 'openLive',
    tag: 'Records',
    summary: "Receive a workspace's changes as they commit (WebSocket or Server-Sent Events)",
    description:
      'Sent with `Upgrade: websocket`, answers 101 and sends each feed item as one JSON text message; sent with ' +
      '`Accept: text/event-stream`, answers 200 and sends each as an event whose `id` is its cursor. Items are ' +
      'exactly those `GET /workspaces/{workspaceId}/changes` shows the caller (what a role hides left out), in ' +
      'commit order, each once, within a second of its commit (usually at once). Anything a client sends is ' +
      'ignored (a text `ping` is answered `pong`). The service closes the stream with 4401 when the key is revoked ' +
      'or its user deleted, 4403 when the user is no longer a member, and 4008 when the consumer falls more than ' +
      '1 MiB behind (the reason is the cursor of the last item sent: resume with `after`); an event stream gets ' +
      'these as a last `close` event. Browsers, which cannot set `Authorization` on a WebSocket, send a `ticket`. ' +
      'Neither upgrade nor event stream asked for: 426. Members only, else 404.',
    auth: 'key',
    ticket: true,
    ok: { status: 200 },
    fileAnswer: { 'text/event-stream': EXAMPLE_EVENT },
    query: LIVE_QUERY,
    errors: [410, 426],
  },
  createLiveTicket: {
    method: 'POST',
    path: '/workspaces/:workspaceId/live/tickets',
    handler: createLiveTicket,
    operationId: 'createLiveTicket',
    tag: 'Records',
    summary: "A single-use ticket for a workspace's live stream",
    description:
      'For a browser, which cannot send the API key on a WebSocket: the ticket opens one stream of this workspace ' +
      'as the key would, within 60 s; used, expired or sent for another workspace it is 401. An API key never ' +
      'goes in a URL. Members only, else 404.',
    auth: 'key',
    ok: { status: 201, schema: LiveTicket },
    errors: [],
  },
} satisfies Record<string, Operation>;
