import fc from 'fast-check';

/** Generates requests for every operation of /openapi.json: mostly valid ones, and each kind of hostile one. */

export interface FuzzRequest {
  method: string;
  /** The operation it was made for (its path may have been bent off it). */
  template: string;
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** What was done to it, for the failure report. */
  mutation: string;
}

/** What exists: ids requests may name, and the field definitions of the object records use. */
export interface FuzzWorld {
  keys: string[];
  adminToken: string;
  ids: Record<string, number[]>;
  /** Ids admin writes may name, so that they never change the world the other requests rely on. */
  adminIds: Record<string, number[]>;
  fields: { name: string; type: string; options?: string[] }[];
}

type Schema = Record<string, any>;

const json = fc.jsonValue({ maxDepth: 3 });

function valueOf(field: FuzzWorld['fields'][number]): fc.Arbitrary<unknown> {
  const options = field.options ?? ['x'];
  switch (field.type) {
    case 'text':
      return fc.string({ unit: 'grapheme', maxLength: 20 });
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'integer':
      return fc.maxSafeInteger();
    case 'boolean':
      return fc.boolean();
    case 'date':
      return fc
        .date({ min: new Date(Date.UTC(1, 0, 1)), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
        .map((d) => d.toISOString().slice(0, 10));
    case 'datetime':
      return fc
        .date({ min: new Date(0), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
        .map((d) => d.toISOString());
    case 'select':
      return fc.constantFrom(...options);
    case 'multiSelect':
      return fc.subarray(options);
    case 'email':
      return fc.emailAddress();
    case 'url':
      return fc.webUrl();
    default:
      return json;
  }
}

/** A value for `schema` from the document: valid by construction, except where the world makes it otherwise. */
function fromSchema(schema: Schema, doc: Schema, world: FuzzWorld, name = '', depth = 0): fc.Arbitrary<unknown> {
  if (schema.$ref !== undefined) {
    const ref = String(schema.$ref).split('/').at(-1) as string;
    if (ref === 'FieldValue') {
      const known = world.fields.map((field) =>
        fc.record({
          fieldName: fc.constant(field.name),
          value: fc.oneof({ arbitrary: valueOf(field), weight: 5 }, fc.constant(null), json),
        }),
      );
      return fc.oneof(
        { arbitrary: fc.oneof(...known), weight: 6 },
        fromSchema(doc.components.schemas.FieldValue, doc, world, name, depth + 1),
      );
    }
    return fromSchema(doc.components.schemas[ref], doc, world, name, depth + 1);
  }
  if (schema.anyOf !== undefined || schema.oneOf !== undefined)
    return fc.oneof(...(schema.anyOf ?? schema.oneOf).map((s: Schema) => fromSchema(s, doc, world, name, depth + 1)));
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum);
  switch (schema.type) {
    case 'object': {
      const entries = Object.entries(schema.properties ?? {}).map(
        ([key, s]) => [key, fromSchema(s as Schema, doc, world, key, depth + 1)] as const,
      );
      return fc.record(Object.fromEntries(entries), { requiredKeys: schema.required ?? [] });
    }
    case 'array':
      return fc.array(schema.items === undefined ? json : fromSchema(schema.items, doc, world, name, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'integer': {
      const known = world.ids[name === 'id' ? 'recordId' : name] ?? world.ids[name.replace(/s$/, '')];
      const any = fc.integer({ min: schema.minimum ?? 0, max: Math.min(schema.maximum ?? 2 ** 31, 2 ** 31) });
      return known === undefined ? any : fc.oneof({ arbitrary: fc.constantFrom(...known), weight: 5 }, any);
    }
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'string':
      if (schema.pattern !== undefined)
        return fc.stringMatching(new RegExp(schema.pattern)).filter((s) => s.length <= (schema.maxLength ?? 200));
      return fc.string({
        unit: 'grapheme',
        minLength: schema.minLength ?? 0,
        maxLength: Math.min(schema.maxLength ?? 30, 30),
      });
    default:
      return json;
  }
}

/** Replaces, wraps or adds at one random place of a JSON value. */
function bend(value: unknown, at: number, change: (node: unknown) => unknown): unknown {
  const nodes: { parent: any; key: string | number }[] = [];
  const walk = (node: unknown, parent: any, key: string | number) => {
    nodes.push({ parent, key });
    if (node !== null && typeof node === 'object')
      for (const [k, child] of Object.entries(node)) walk(child, node, Array.isArray(node) ? Number(k) : k);
  };
  const root = { v: structuredClone(value) };
  walk(root.v, root, 'v');
  const target = nodes[at % nodes.length] as { parent: any; key: string | number };
  target.parent[target.key] = change(target.parent[target.key]);
  return root.v;
}

const nest = (node: unknown, levels: number): unknown => {
  let out = node;
  for (let i = 0; i < levels; i++) out = [out];
  return out;
};

const HUGE = ['1e400', '-1e309', '1e-400', '9007199254740993', '-18446744073709551617', '1.8e308'];

/** The body text after a mutation, and the mutation's name. */
function mutateBody(
  kind: string,
  value: unknown,
  pick: number,
  other: unknown,
): [string | Uint8Array | undefined, string] {
  const text = JSON.stringify(value);
  switch (kind) {
    case 'wrong type':
      return [JSON.stringify(bend(value, pick, () => other)), kind];
    case 'extra property':
      return [
        JSON.stringify(
          bend(value, pick, (n) =>
            n !== null && typeof n === 'object' && !Array.isArray(n) ? { ...n, feildValues: other } : n,
          ),
        ),
        kind,
      ];
    case 'deep':
      return [
        JSON.stringify(bend(value, pick, (n) => nest(n, [96, 100, 101, 150, 3000, 5000][pick % 6] as number))),
        kind,
      ];
    case 'huge number':
      return [
        JSON.stringify(bend(value, pick, () => '\u0000HUGE\u0000')).replace(
          '"\\u0000HUGE\\u0000"',
          HUGE[pick % HUGE.length] as string,
        ),
        kind,
      ];
    case 'duplicate key': {
      const m = /\{"([^"\\]+)":/.exec(text);
      return [m === null ? text : text.replace(m[0], `{"${m[1]}":${JSON.stringify(other)},"${m[1]}":`), kind];
    }
    case 'lone surrogate':
      return [JSON.stringify(bend(value, pick, () => 'x')).replace('"x"', '"\\ud800"'), kind];
    case 'bad utf-8':
      return [
        new Uint8Array([
          ...new TextEncoder().encode(text.slice(0, -1)),
          0xff,
          0xfe,
          ...new TextEncoder().encode(text.slice(-1)),
        ]),
        kind,
      ];
    case 'truncated':
      return [text.slice(0, Math.max(0, text.length - 1 - (pick % 5))), kind];
    case 'no body':
      return [undefined, kind];
    default:
      return [text, 'valid'];
  }
}

const BODY_MUTATIONS = [
  'valid',
  'valid',
  'valid',
  'valid',
  'wrong type',
  'extra property',
  'deep',
  'huge number',
  'duplicate key',
  'lone surrogate',
  'bad utf-8',
  'truncated',
  'no body',
];

const CONTENT_TYPES = [
  'application/json',
  'application/json',
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON; Charset="UTF-8"',
  'application/json; charset=latin1',
  'text/plain',
  'application/json; charset=UTF-16',
];

const BAD_IDS = ['0', '007', '99999999999999999999', 'abc', '-1', '1.0', '%F0%9F%98%80', '%2e%2e', ' 1', '1e3'];

/** An arbitrary request for one documented operation. */
export function requestFor(doc: Schema, world: FuzzWorld, template: string, method: string): fc.Arbitrary<FuzzRequest> {
  const op = doc.paths[template][method];
  const admin = template.startsWith('/admin');
  const params = [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
  const idOf = (name: string) => {
    const pool = (admin && method !== 'get' ? world.adminIds : world.ids)[name] ?? [1];
    return fc.oneof({ arbitrary: fc.constantFrom(...pool.map(String)), weight: 8 }, fc.constantFrom(...BAD_IDS));
  };
  // A file body (an import) is sent as whatever the fuzzer makes of its text: JSON, which the operation refuses.
  const jsonBody = op.requestBody?.content['application/json'];
  const body = jsonBody === undefined ? fc.constant(undefined) : fromSchema(jsonBody.schema, doc, world);
  // The `field.<name>` filters are one object parameter in the document: the constants below stand for them.
  const query = (op.parameters ?? []).filter((p: Schema) => p.in === 'query' && p.schema?.type !== 'object');
  const queryArb = fc.array(
    fc.oneof(
      ...query.map((p: Schema) => fromSchema(p.schema, doc, world).map((v) => [p.name, String(v)] as const)),
      fc.constant(['field.firstName', 'A'] as const),
      fc.constant(['field.firstName', '%ED%A0%80'] as const),
      fc.constant(['cursor', 'MQ.AAAAAAAAAAAAAAAAAAAAAA'] as const),
      fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })),
    ),
    { maxLength: query.length === 0 ? 1 : 3 },
  );
  const auth = admin
    ? fc.oneof(
        { arbitrary: fc.constant(`Bearer ${world.adminToken}`), weight: 8 },
        fc.constantFrom('', 'Bearer nope', `Bearer ${world.keys[0]}`, 'Basic x'),
      )
    : fc.oneof(
        { arbitrary: fc.constantFrom(...world.keys.map((k) => `Bearer ${k}`)), weight: 8 },
        fc.constantFrom('', 'Bearer nope', `Bearer ${world.adminToken}`, 'Bearer'),
      );
  const optional = (header: string, values: string[]) =>
    fc.option(fc.constantFrom(...values.map((v) => [header, v] as const)), { freq: 2 });
  return fc
    .record({
      ids: fc.tuple(...params.map(idOf)),
      value: body,
      mutation: fc.constantFrom(...BODY_MUTATIONS),
      pick: fc.nat(),
      other: json,
      query: queryArb,
      auth,
      contentType: fc.constantFrom(...CONTENT_TYPES),
      ifMatch: optional('If-Match', ['*', '"1"', '"2", "3"', 'W/"1"', '1', '"abc"']),
      idempotency: optional('Idempotency-Key', ['k-1', 'k-2', 'has space', 'x'.repeat(256)]),
      requestId: optional('X-Request-Id', ['rid-1', 'has space', 'x'.repeat(200)]),
      odd: fc.constantFrom('', '', '', '', '', '/', '/x/%2e%2e', '/x/..', '?'),
    })
    .map((r): FuzzRequest => {
      let path = template;
      params.forEach((name, i) => (path = path.replace(`{${name}}`, r.ids[i] as string)));
      // A GET never carries a body; other operations without one get a stray body now and then.
      const bodiless = op.requestBody === undefined && (method === 'get' || r.mutation === 'valid');
      const [sent, mutation] = bodiless ? [undefined, 'valid'] : mutateBody(r.mutation, r.value ?? {}, r.pick, r.other);
      // A raw `%ED%A0%80` stands for a client that percent-encodes bytes that are not UTF-8.
      const qs = (r.query as (readonly [string, string])[])
        .map(([k, v]) => `${encodeURIComponent(k)}=${v === '%ED%A0%80' ? v : encodeURIComponent(v)}`)
        .join('&');
      if (r.odd === '/') path += '/';
      else if (r.odd.startsWith('/x')) path = r.odd + path;
      if (qs !== '') path += `?${qs}`;
      else if (r.odd === '?') path += '?';
      const headers: Record<string, string> = {};
      if (r.auth !== '') headers.Authorization = r.auth;
      if (sent !== undefined) headers['Content-Type'] = r.contentType;
      for (const header of [r.ifMatch, r.idempotency, r.requestId]) if (header !== null) headers[header[0]] = header[1];
      return {
        method: method.toUpperCase(),
        template,
        path,
        headers,
        ...(sent === undefined ? {} : { body: sent }),
        mutation: `${mutation}${r.odd === '' ? '' : ` + path ${r.odd}`}`,
      };
    });
}
