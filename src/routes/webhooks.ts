import type { IRequest } from 'itty-router';
import type * as v from 'valibot';
import type { Context } from '../context.ts';
import { caught } from '../core/caught.ts';
import type { Caller } from '../domain/access.ts';
import { urlProblem } from '../domain/webhook.ts';
import { keyHashOf } from '../http/auth.ts';
import { readJson } from '../http/body.ts';
import { cursorKey, readCursor } from '../http/cursor.ts';
import { cursorGone, forbidden, invalidBody, notFound, unauthorized, unprocessable } from '../http/errors.ts';
import { tenantPathIds } from '../http/params.ts';
import { json } from '../http/respond.ts';
import { parseObject } from '../schemas/parse.ts';
import { ReplayInput, WebhookInput, WebhookStatusInput, type WebhookSchema } from '../schemas/webhooks.ts';
import { storedCursorKey } from '../storage/cursor-key.ts';
import { Webhooks, type Webhook } from '../storage/webhooks.ts';
import { derivedWebhookSecret } from '../push/sign.ts';
import { keyHeader, type KeyHeader } from '../write/claim.ts';
import { HIDDEN_SECRET, WebhookWrites } from '../storage/webhook-writes.ts';
import { adminWrite } from '../write/admin.ts';
import { forgetSubscriptions } from '../push/wake.ts';

/**
 * Webhook subscriptions of a workspace, for its editors: a viewer is 403, anyone else 404, as
 * for the workspace's records. Order of checks: 401, a bad path id 400, not a member 404, not an
 * editor 403, a bad body 400/415/422, an unknown subscription 404.
 */

const publicOf = ({
  id,
  url,
  types,
  objectIds,
  createdAt,
  status,
  reason,
}: Webhook): v.InferOutput<typeof WebhookSchema> => ({
  id,
  url,
  types,
  objectIds,
  createdAt,
  status,
  reason,
});

const webhooksOf = (context: Context): Webhooks => new Webhooks(context.db, context.meter);
const objectOf = (context: Context, id: number) => context.env.WEBHOOKS.getByName(String(id));

/** The caller, once proven an editor of the workspace; the body's problem (if any) only after that. */
async function editor<T>(
  request: IRequest,
  context: Context,
  body?: () => Promise<T>,
): Promise<{ caller: Caller; workspaceId: number; webhookId: number; body: T }> {
  const keyHash = await keyHashOf(request);
  const names = request.params.webhookId === undefined ? ['workspaceId'] : ['workspaceId', 'webhookId'];
  const ids = tenantPathIds(request.params, context.tenant.id, ...names) as Record<string, number>;
  const parsed = await caught(async () => (body === undefined ? (undefined as T) : body()));
  const { caller } = await context.store.createContext(keyHash, []);
  if (caller === undefined) throw unauthorized();
  const workspaceId = ids.workspaceId as number;
  const role = caller.roles.get(workspaceId);
  if (role === undefined) throw notFound('Workspace');
  if (role !== 'editor') throw forbidden('Webhooks of a workspace are for its editors.');
  if (!parsed.ok) throw parsed.error;
  return { caller, workspaceId, webhookId: ids.webhookId ?? 0, body: parsed.value };
}

/** The body by `schema`; one 400 lists its problems with those of the Idempotency-Key header. */
function bodyOf<S extends Parameters<typeof parseObject>[0]>(request: Request, schema: S, key: KeyHeader) {
  return async (): Promise<v.InferOutput<S>> => {
    const parsed = parseObject(schema, await readJson(request));
    if (!parsed.ok || key.problems.length > 0)
      throw invalidBody([...(parsed.ok ? [] : parsed.problems), ...key.problems]);
    return parsed.value;
  };
}

/** A write without a body: 400 when its Idempotency-Key header is malformed. */
function keyOnly(key: KeyHeader) {
  return async (): Promise<undefined> => {
    if (key.problems.length > 0) throw invalidBody(key.problems);
    return undefined;
  };
}

/** The subscription of the path, or 404. */
async function existing(context: Context, webhookId: number, workspaceId: number): Promise<Webhook> {
  const webhook = await webhooksOf(context).get(webhookId, workspaceId);
  if (webhook === undefined) throw notFound('Webhook');
  return webhook;
}

/**
 * A create's answer with its secret put back. The ledger holds the answer without it; the secret
 * is derived again from the write id (as it was when the subscription's row was written), so an
 * answer after a lost reply or a key's replay shows the same secret without a second copy of it.
 */
function revealSecret(body: string, secret: string): string {
  if (!body.endsWith(HIDDEN_SECRET)) throw new Error('a webhook create answer without its secret');
  return `${body.slice(0, -HIDDEN_SECRET.length)},"secret":${JSON.stringify(secret)}}`;
}

/**
 * The key secrets of new subscriptions are derived under: the CURSOR_SECRET secret, else the key
 * kept in D1 (read once per isolate).
 */
const serviceKey = (context: Context): Promise<string> =>
  cursorKey(context.env.CURSOR_SECRET, () => storedCursorKey(context.env.DB, context.meter));

/**
 * POST /workspaces/{workspaceId}/webhooks: delivery starts after the feed's newest change. One
 * ledger write: a retry after a lost reply, or with the same Idempotency-Key, makes no second
 * subscription and shows the same secret.
 */
export async function createWebhook(request: IRequest, context: Context): Promise<Response> {
  const key = keyHeader(request);
  const { caller, workspaceId, body } = await editor(request, context, bodyOf(request, WebhookInput, key));
  const problem = urlProblem(body.url, context.env.WEBHOOK_ALLOW_HTTP);
  if (problem !== undefined) throw unprocessable([{ pointer: '/url', code: 'url_not_allowed', message: problem }]);
  const secretKey = await serviceKey(context);
  const writes = new WebhookWrites(context.db, context.tenant.id);
  return adminWrite(
    context,
    key.key,
    body,
    {
      batch: async (_, writeId, now) =>
        writes.create(
          writeId,
          {
            workspaceId,
            url: body.url,
            types: body.types === undefined ? null : [...new Set(body.types)],
            objectIds: body.objectIds === undefined ? null : [...new Set(body.objectIds)].sort((a, b) => a - b),
            secret: await derivedWebhookSecret(secretKey, writeId),
            by: caller.userId,
          },
          now,
        ),
      failure: () => notFound('Workspace'),
      done: (_, outcome) => {
        forgetSubscriptions(workspaceId);
        const { id } = JSON.parse(outcome.body) as { id: number };
        // Starts its alarms; should this call fail, the next write or the Cron Trigger wakes it.
        context.waitUntil(
          objectOf(context, id)
            .wake(id)
            .catch(() => {}),
        );
      },
      reveal: async (answer, writeId) => revealSecret(answer, await derivedWebhookSecret(secretKey, writeId)),
    },
    caller.userId,
  );
}

/** GET /workspaces/{workspaceId}/webhooks: oldest first, never a secret. */
export async function listWebhooks(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId } = await editor(request, context);
  const items = (await webhooksOf(context).list(workspaceId)).map(publicOf);
  return json({ items });
}

/**
 * DELETE /workspaces/{workspaceId}/webhooks/{webhookId}: nothing more is sent. Its object is told
 * after the commit; should that fail, it finds the subscription gone at its next alarm.
 */
export async function deleteWebhook(request: IRequest, context: Context): Promise<Response> {
  const key = keyHeader(request);
  const { caller, workspaceId, webhookId } = await editor(request, context, keyOnly(key));
  const writes = new WebhookWrites(context.db, context.tenant.id);
  return adminWrite(
    context,
    key.key,
    null,
    {
      batch: (_, writeId) => writes.remove(writeId, webhookId, workspaceId),
      failure: () => notFound('Webhook'),
      done: async () => {
        forgetSubscriptions(workspaceId);
        await objectOf(context, webhookId).forget();
      },
    },
    caller.userId,
  );
}

/**
 * PATCH /workspaces/{workspaceId}/webhooks/{webhookId}: pause (`disabled`) or resume (`active`)
 * where it stopped. A resume tells the object after the commit; should that fail, the Cron
 * Trigger wakes every active subscription.
 */
export async function updateWebhook(request: IRequest, context: Context): Promise<Response> {
  const key = keyHeader(request);
  const { caller, workspaceId, webhookId, body } = await editor(
    request,
    context,
    bodyOf(request, WebhookStatusInput, key),
  );
  const reason = body.status === 'disabled' ? 'paused by an editor' : null;
  const writes = new WebhookWrites(context.db, context.tenant.id);
  return adminWrite(
    context,
    key.key,
    body,
    {
      batch: (_, writeId) => writes.setStatus(writeId, webhookId, workspaceId, body.status, reason),
      failure: () => notFound('Webhook'),
      done: async () => {
        forgetSubscriptions(workspaceId);
        if (body.status === 'active') await objectOf(context, webhookId).resume(webhookId);
      },
    },
    caller.userId,
  );
}

/**
 * POST /workspaces/{workspaceId}/webhooks/{webhookId}/replay: delivers again every matching
 * change after `after`. Its object is told first, then the ledger row holding the answer is
 * written: a failure stores nothing, and telling the object twice only sends items again.
 */
export async function replayWebhook(request: IRequest, context: Context): Promise<Response> {
  const key = keyHeader(request);
  const { caller, workspaceId, webhookId, body } = await editor(request, context, bodyOf(request, ReplayInput, key));
  const secret = await serviceKey(context);
  const after = await caught(() => readCursor(secret, body.after, `changes/${workspaceId}`, 'after'));
  if (!after.ok)
    throw invalidBody([
      { pointer: '/after', code: 'invalid_cursor', message: 'not a cursor of this workspace’s change feed' },
    ]);
  const writes = new WebhookWrites(context.db, context.tenant.id);
  return adminWrite(
    context,
    key.key,
    body,
    {
      batch: async (_, writeId) => {
        await existing(context, webhookId, workspaceId);
        const { horizon } = await webhooksOf(context).changes(workspaceId, Number.MAX_SAFE_INTEGER, 1, caller.userId);
        if (after.value < horizon)
          throw cursorGone({
            pointer: '/after',
            code: 'gone',
            message: 'changes after this position are no longer kept',
          });
        await objectOf(context, webhookId).replay(webhookId, after.value);
        return writes.replayed(writeId, webhookId, workspaceId);
      },
      failure: () => notFound('Webhook'),
    },
    caller.userId,
  );
}

/** GET /workspaces/{workspaceId}/webhooks/{webhookId}/deliveries: the last 100 attempts, newest first. */
export async function listDeliveries(request: IRequest, context: Context): Promise<Response> {
  const { workspaceId, webhookId } = await editor(request, context);
  await existing(context, webhookId, workspaceId);
  return json({ items: await objectOf(context, webhookId).deliveries() });
}
