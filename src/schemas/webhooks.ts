import * as v from 'valibot';
import { Id } from './common.ts';
import { maxChars } from './max-chars.ts';

export const ChangeTypeSchema = v.picklist(['created', 'updated', 'deleted', 'restored']);
const Status = v.picklist(['active', 'disabled']);
const Url = v.pipe(v.string(), v.minLength(1), maxChars(2048));

/** POST /workspaces/{workspaceId}/webhooks. Leaving out `types` or `objectIds` means "all". */
export const WebhookInput = v.strictObject({
  url: Url,
  types: v.exactOptional(v.pipe(v.array(ChangeTypeSchema), v.minLength(1), v.maxLength(4))),
  objectIds: v.exactOptional(v.pipe(v.array(Id), v.minLength(1), v.maxLength(100))),
});

/** A subscription as listed: never its secret. `types`/`objectIds` null: no filter. `reason`: why it is disabled. */
export const WebhookSchema = v.strictObject({
  id: Id,
  url: Url,
  types: v.nullable(v.array(ChangeTypeSchema)),
  objectIds: v.nullable(v.array(Id)),
  createdAt: Id,
  status: Status,
  reason: v.nullable(v.string()),
});

/** The answer to a subscription: the only time its signing secret is shown. */
export const NewWebhook = v.strictObject({ ...WebhookSchema.entries, secret: v.string() });

export const WebhookList = v.strictObject({ items: v.array(WebhookSchema) });

/** PATCH …/webhooks/{webhookId}: `disabled` pauses, `active` resumes where it stopped. */
export const WebhookStatusInput = v.strictObject({ status: Status });

/** POST …/webhooks/{webhookId}/replay: re-sends every matching change after this feed cursor. */
export const ReplayInput = v.strictObject({ after: v.pipe(v.string(), v.minLength(1), v.maxLength(200)) });

/** One delivery attempt: `status` null when no answer came; `error` null on a 2xx. */
export const Delivery = v.strictObject({
  cursor: v.string(),
  at: Id,
  status: v.nullable(Id),
  durationMs: Id,
  error: v.nullable(v.string()),
});

export const DeliveryList = v.strictObject({ items: v.array(Delivery) });
