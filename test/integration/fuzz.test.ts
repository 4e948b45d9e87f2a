import { Ajv2020 } from 'ajv/dist/2020.js';
import { env, exports } from 'cloudflare:workers';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { requestFor, type FuzzRequest, type FuzzWorld } from './fuzz-requests.ts';
import { ADMIN_TOKEN, admin, call, createOne, newUser, newWorkspace } from './helpers.ts';

/**
 * Requests generated from /openapi.json, valid and hostile, for every operation. Each answer must
 * be below 500, a status the document lists for its operation, with a body its schema allows; a
 * refused request writes nothing; what an accepted write answers is what a later read returns.
 * Seeded: a failure prints its seed, and FUZZ_SEED=<seed> npm test replays the run.
 */

const SEED = env.FUZZ_SEED === '' ? 20261123 : Number(env.FUZZ_SEED);
const RUNS = env.FUZZ_RUNS === '' ? 2000 : Number(env.FUZZ_RUNS);

const FIELDS = [
  { name: 'title', type: 'text' },
  { name: 'amount', type: 'number' },
  { name: 'count', type: 'integer' },
  { name: 'done', type: 'boolean' },
  { name: 'due', type: 'date' },
  { name: 'at', type: 'datetime' },
  { name: 'stage', type: 'select', options: ['lead', 'customer'] },
  { name: 'tags', type: 'multiSelect', options: ['a', 'b', 'c'] },
  { name: 'mail', type: 'email' },
  { name: 'site', type: 'url' },
  { name: 'doc', type: 'json' },
];

async function makeWorld(): Promise<FuzzWorld> {
  const editor = await newUser('fuzz editor');
  // Several keys of one user: the rate limit counts per key.
  const keys = [editor.key];
  for (let i = 0; i < 9; i++) keys.push((await admin('POST', `/admin/users/${editor.id}/keys`)).body.key);
  const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
  const object = (
    await admin('POST', '/admin/objects', {
      name: 'Fuzz',
      workspaceIds: [workspaceId],
      nameTemplate: '{title} {tags} {doc}',
      fields: FIELDS,
    })
  ).body;
  const records = [];
  for (const title of ['a', 'b', 'c'])
    records.push(await createOne(editor.key, object.id, [{ fieldName: 'title', value: title }]));
  // Admin writes name only these, so they never take the editor's rights or change the object away.
  const spare = await newUser('spare');
  const spareWorkspace = await newWorkspace({ [spare.id]: 'viewer' });
  const spareObject = (
    await admin('POST', '/admin/objects', { name: 'Spare', workspaceIds: [spareWorkspace], fields: [] })
  ).body;
  const spareKeys = (await admin('GET', `/admin/users/${spare.id}/keys`)).body.map((k: { id: number }) => k.id);
  const ids = {
    workspaceId: [workspaceId],
    recordId: records.map((r) => r.id),
    objectId: [object.id],
    userId: [editor.id],
    version: [1],
    keyId: [1],
    ownedBy: [editor.id],
  };
  const adminIds = {
    workspaceId: [spareWorkspace],
    userId: [spare.id],
    objectId: [spareObject.id],
    version: [1],
    keyId: spareKeys,
    workspaceIds: [spareWorkspace],
  };
  return { keys, adminToken: ADMIN_TOKEN, ids, adminIds, fields: FIELDS };
}

/** Everything a request could write: unchanged by any refused request. */
async function fingerprint(): Promise<string> {
  const tables = [
    'users',
    'api_keys',
    'workspaces',
    'memberships',
    'objects',
    'object_versions',
    'records',
    'changes',
    'idempotency_keys',
  ];
  const counts = await env.DB.prepare(
    `SELECT ${tables.map((t) => `(SELECT count(*) FROM ${t})`).join(', ')}, ` +
      '(SELECT total(version) FROM records) AS v, (SELECT group_concat(role) FROM memberships) AS roles',
  ).raw();
  return JSON.stringify(counts);
}

function matchTemplate(doc: any, path: string): string | undefined {
  return Object.keys(doc.paths).find((t) => new RegExp(`^${t.replace(/\{\w+\}/g, '[^/]+')}/?$`).test(path));
}

async function send(request: FuzzRequest): Promise<{ status: number; headers: Headers; text: string; url: string }> {
  const url = `http://records.test${request.path}`;
  const res = await exports.default.fetch(url, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  return { status: res.status, headers: res.headers, text: await res.text(), url: new Request(url).url };
}

/** The records a successful record write answered, unless it replayed a stored answer. */
function writtenRecords(template: string, method: string, body: any): any[] {
  if (!/^\/(workspaces\/\{workspaceId\}\/)?records/.test(template) || method === 'GET') return [];
  return (Array.isArray(body) ? body.map((item) => item.record) : [body]).filter((r) => r?.id !== undefined);
}

describe('fuzz: every operation of /openapi.json, valid and hostile', () => {
  it(
    `answers only what the document promises, writes nothing when it refuses, and reads back what it wrote ` +
      `(seed ${SEED})`,
    { timeout: 180_000 },
    async () => {
      console.log(
        `fuzz seed ${SEED}, ${RUNS} requests (replay: FUZZ_SEED=${SEED} npx vitest run --config ` +
          `test/vitest.config.ts test/integration/fuzz.test.ts)`,
      );
      const doc = (await call('GET', '/openapi.json')).body;
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      ajv.addSchema({ $id: 'doc', components: doc.components });
      const validators = new Map<string, ReturnType<typeof ajv.compile>>();
      const validate = (schema: unknown, value: unknown) => {
        const key = JSON.stringify(schema);
        let v = validators.get(key);
        if (v === undefined)
          validators.set(key, (v = ajv.compile(JSON.parse(key.replaceAll('"#/components', '"doc#/components')))));
        return v(value) ? undefined : ajv.errorsText(v.errors);
      };
      const world = await makeWorld();
      const operations = Object.entries(doc.paths).flatMap(([template, methods]) =>
        Object.keys(methods as object).map((method) => requestFor(doc, world, template, method)),
      );
      const requests = fc.sample(fc.oneof(...operations), { seed: SEED, numRuns: RUNS });
      const failures: string[] = [];
      const started = Date.now();
      const byStatus = new Map<number, number>();
      for (const [index, request] of requests.entries()) {
        const fail = (why: string) =>
          failures.push(`#${index} ${request.method} ${request.path} [${request.mutation}] → ${why}`);
        const before = await fingerprint();
        const answer = await send(request);
        byStatus.set(answer.status, (byStatus.get(answer.status) ?? 0) + 1);
        // A file's bytes are no JSON, whatever they hold: only a JSON answer is read as one.
        const json = /^application\/([a-z.+-]*\+)?json/.test(answer.headers.get('Content-Type') ?? '');
        const body = answer.text === '' || !json ? undefined : JSON.parse(answer.text);
        if (answer.status >= 500) fail(`${answer.status} ${answer.text.slice(0, 300)}`);
        const resolved = new URL(answer.url).pathname;
        const template = matchTemplate(doc, resolved);
        const op = template === undefined ? undefined : doc.paths[template][request.method.toLowerCase()];
        if (op === undefined) {
          if (answer.status !== (template === undefined ? 404 : 405))
            fail(`${answer.status} for no documented operation`);
          const wrong = validate({ $ref: '#/components/schemas/Problem' }, body);
          if (wrong !== undefined) fail(`problem body: ${wrong}`);
          continue;
        }
        const response = op.responses[String(answer.status)];
        if (response === undefined) {
          fail(`status ${answer.status} not documented (${answer.text.slice(0, 200)})`);
          continue;
        }
        const media = response.content === undefined ? undefined : Object.keys(response.content)[0];
        if (media === undefined) {
          if (answer.text !== '') fail('undocumented body');
        } else {
          if (!answer.headers.get('Content-Type')?.startsWith(media))
            fail(`content type ${answer.headers.get('Content-Type')}, documented ${media}`);
          const wrong = json ? validate(response.content[media].schema, body) : undefined;
          if (wrong !== undefined) fail(`body: ${wrong} (${answer.text.slice(0, 200)})`);
        }
        if (answer.status >= 400 && (await fingerprint()) !== before)
          fail(`refused with ${answer.status}, yet something was written`);
        if (answer.status < 300 && answer.headers.get('Idempotent-Replayed') !== 'true') {
          for (const record of writtenRecords(template as string, request.method, body)) {
            const read = await call('GET', `/records/${record.id}`, { key: world.keys[0] as string });
            if (JSON.stringify(read.body) !== JSON.stringify(record))
              fail(
                `answered ${JSON.stringify(record).slice(0, 200)} ` +
                  `but a read gives ${JSON.stringify(read.body).slice(0, 200)}`,
              );
          }
          if (request.method !== 'GET' && /^\/admin\/objects/.test(template as string)) {
            const read = await admin('GET', `/admin/objects/${body.id}`);
            if (JSON.stringify(read.body) !== JSON.stringify(body))
              fail(`answered ${answer.text.slice(0, 200)} but a read gives ${JSON.stringify(read.body).slice(0, 200)}`);
          }
        }
      }
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      console.log(
        `fuzz seed ${SEED}: ${requests.length} requests in ${seconds} s; ` +
          `statuses ${JSON.stringify(Object.fromEntries([...byStatus].sort(([a], [b]) => a - b)))}`,
      );
      expect(failures.slice(0, 30), `seed ${SEED}: ${failures.length} failures`).toEqual([]);
      // The run reached past the front door: writes were accepted and hostile input refused.
      expect(byStatus.get(200) ?? 0).toBeGreaterThan(RUNS / 20);
      expect(byStatus.get(400) ?? 0).toBeGreaterThan(RUNS / 20);
    },
  );
});
