import {
  DeliveryList,
  NewWebhook,
  ReplayInput,
  WebhookInput,
  WebhookList,
  WebhookSchema,
  WebhookStatusInput,
} from '../schemas/webhooks.ts';
import {
  createWebhook,
  deleteWebhook,
  listDeliveries,
  listWebhooks,
  replayWebhook,
  updateWebhook,
} from './webhooks.ts';
import type { Operation } from './operation.ts';

/** A workspace's webhook subscriptions and their deliveries. */
export const webhookOperations = {
  createWebhook: {
    method: 'POST',
    path: '/workspaces/:workspaceId/webhooks',
    handler: createWebhook,
    operationId: 'createWebhook',
    tag: 'Webhooks',
    summary: 'Subscribe a URL to the changes of a workspace (secret shown once)',
    description:
      "Every later change of the workspace's feed that matches `types` and `objectIds` (left out: all) is POSTed to" +
      " `url` as its feed item, with Standard Webhooks headers: `webhook-id` (the item's feed cursor, the same on " +
      'every retry; dedupe by it), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,` base64 HMAC-' +
      'SHA256 with the key in `secret` of `<id>.<timestamp>.<body>`). In feed order, one at a time; a non-2xx, a ' +
      'timeout (10 s) or a network error is retried after 5 s, doubling to at most 1 h; failing 3 days in a row ' +
      'disables the subscription. `url` must be `https:` (422 otherwise). Editors only: a viewer is 403. ' +
      'A retry with the same Idempotency-Key answers the same subscription and secret.',
    auth: 'key',
    idempotencyKey: true,
    body: WebhookInput,
    ok: { status: 201, schema: NewWebhook },
    errors: [403, 422],
  },
  listWebhooks: {
    method: 'GET',
    path: '/workspaces/:workspaceId/webhooks',
    handler: listWebhooks,
    operationId: 'listWebhooks',
    tag: 'Webhooks',
    summary: "List a workspace's webhook subscriptions",
    description: 'Oldest first, never their secrets. A disabled subscription says why in `reason`. Editors only.',
    auth: 'key',
    ok: { status: 200, schema: WebhookList },
    errors: [403],
  },
  updateWebhook: {
    method: 'PATCH',
    path: '/workspaces/:workspaceId/webhooks/:webhookId',
    handler: updateWebhook,
    operationId: 'updateWebhook',
    tag: 'Webhooks',
    summary: 'Pause or resume a subscription',
    description:
      '`disabled` pauses it; `active` resumes it where it stopped (the item it was failing on is retried at once), ' +
      'also after it was disabled for failing.',
    auth: 'key',
    idempotencyKey: true,
    body: WebhookStatusInput,
    ok: { status: 200, schema: WebhookSchema },
    errors: [403],
  },
  deleteWebhook: {
    method: 'DELETE',
    path: '/workspaces/:workspaceId/webhooks/:webhookId',
    handler: deleteWebhook,
    operationId: 'deleteWebhook',
    tag: 'Webhooks',
    summary: 'Delete a subscription',
    description: 'Nothing more is sent; its delivery log goes with it.',
    auth: 'key',
    idempotencyKey: true,
    ok: { status: 204 },
    errors: [403],
  },
  replayWebhook: {
    method: 'POST',
    path: '/workspaces/:workspaceId/webhooks/:webhookId/replay',
    handler: replayWebhook,
    operationId: 'replayWebhook',
    tag: 'Webhooks',
    summary: 'Send again every matching change after a feed cursor',
    description:
      "`after` is a cursor of the workspace's change feed (an item's `cursor` or `webhook-id`). Delivery goes back " +
      'to that point at once; items are sent again with their own `webhook-id`. A cursor older than the feed keeps ' +
      '(7 days) is 410.',
    auth: 'key',
    idempotencyKey: true,
    body: ReplayInput,
    ok: { status: 200, schema: WebhookSchema },
    errors: [403, 410],
  },
  listDeliveries: {
    method: 'GET',
    path: '/workspaces/:workspaceId/webhooks/:webhookId/deliveries',
    handler: listDeliveries,
    operationId: 'listDeliveries',
    tag: 'Webhooks',
    summary: 'The last 100 delivery attempts',
    description:
      "Newest first: the item's cursor, when, the receiver's status (null without an answer), how long it took, and" +
      ' why it failed (null on a 2xx).',
    auth: 'key',
    ok: { status: 200, schema: DeliveryList },
    errors: [403],
  },
} satisfies Record<string, Operation>;
