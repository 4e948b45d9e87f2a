import type { IRequest } from 'itty-router';
import type * as v from 'valibot';
import type { Context } from '../context.ts';

/** How an operation is described: the table routes it and /openapi.json documents it from this. */

export interface QueryParameter {
  name: string;
  description: string;
  schema: Record<string, unknown>;
  /** Without it the request is refused (400); otherwise the parameter may be left out. */
  required?: true;
  /** An object whose properties are sent as query parameters of their own (`field.stage=lead`). */
  style?: 'form';
  explode?: true;
}

export type Handler = (request: IRequest, context: Context) => Promise<Response> | Response;
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type Tag = 'Records' | 'Webhooks' | 'Admin' | 'Tenants' | 'Service';

/** One operation: how it is routed and how /openapi.json documents it. */
export interface Operation {
  method: Method;
  /** itty-router path; `:name` parameters are ids (digits only). */
  path: string;
  handler: Handler;
  /** Unique, camelCase: the name a generated client gives the operation. */
  operationId: string;
  tag: Tag;
  summary: string;
  /** What a client needs to know beyond the summary (CommonMark). */
  description: string;
  /** `admin`: the admin token or a tenant administrator's key; `operator`: the admin token alone. */
  auth: 'key' | 'admin' | 'operator' | 'none';
  body?: v.GenericSchema;
  /** The body may be left out altogether. */
  bodyOptional?: true;
  ok: { status: number; schema?: v.GenericSchema; etag?: boolean; location?: boolean };
  /** A request body that is a file rather than JSON: each media type it may have, with an example. */
  fileBody?: Record<string, string>;
  /** An answer that is a file rather than JSON (streamed): each media type, with an example. */
  fileAnswer?: Record<string, string>;
  /** Honours an `If-Match` request header. */
  ifMatch?: boolean;
  /** This write accepts the `Idempotency-Key` request header. */
  idempotencyKey?: true;
  /** A single-use `ticket` query parameter may stand for the API key (where a browser cannot send a header). */
  ticket?: true;
  /** Query parameters, as /openapi.json documents them. */
  query?: QueryParameter[];
  /** Statuses beyond those every operation of its kind can answer (see openapi.ts). */
  errors: number[];
}
