import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byName, foldItem } from '../feed-fold.ts';
import { OpenApiCheck } from './openapi-check.ts';
import { startLocalWorker, type LocalWorker } from './server.ts';

const ADMIN = 'e2e-admin-token';
let worker: LocalWorker;
let check: OpenApiCheck;

/** A client that sends every answer past the OpenAPI validator. */
async function http(method: string, path: string, key?: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: {
      ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }),
      ...(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...headers,
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  const json = text === '' ? undefined : JSON.parse(text);
  check.check(method, path, res.status, res.headers.get('Content-Type'), json);
  return { status: res.status, headers: res.headers, body: json };
}

/** One request with its target sent byte for byte, as no fetch() would send it (fetch resolves dot segments). */
function rawRequest(
  method: string,
  target: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(worker.url);
  const head = Object.entries({
    Host: hostname,
    Connection: 'close',
    'Content-Length': String(Buffer.byteLength(body)),
    ...headers,
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () =>
      socket.write(`${method} ${target} HTTP/1.1\r\n${head}\r\n${body}`),
    );
    let data = '';
    socket.on('data', (chunk) => (data += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const [status, text] = [Number(data.split(' ')[1]), data.slice(data.indexOf('\r\n\r\n') + 4)];
      resolve({
        status,
        body: text === '' ? undefined : JSON.parse(text.replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, '')),
      });
    });
  });
}

beforeAll(async () => {
  // The README's CORS example calls from the origin of its browser page. Its move waits out the isolates'
  // memory of the tenant's route after the switch: 1 s here, not 30 s, so the example ends in seconds.
  worker = await startLocalWorker({
    vars: { ADMIN_TOKEN: ADMIN, CORS_ORIGINS: 'http://localhost:8000', ROUTE_TTL_MS: '1000' },
  });
  check = new OpenApiCheck(await (await fetch(`${worker.url}/openapi.json`)).json());
});

afterAll(async () => {
  await worker?.stop();
});

const README = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

/** The shell block that follows the walk-through marker in README.md, and the output shown after it. */
function readmeWalkThrough(): { script: string; shown: string } {
  const match = /<!-- walk-through[^>]*-->\s*```sh\n([\s\S]*?)```[\s\S]*?```text\n([\s\S]*?)```/.exec(README);
  if (match?.[1] === undefined || match[2] === undefined)
    throw new Error('README.md has no walk-through block with its output');
  // Lines starting with "# " label the steps of the shown output; the shell does not print them.
  return {
    script: match[1],
    shown: match[2]
      .split('\n')
      .filter((line) => !line.startsWith('# '))
      .join('\n'),
  };
}

/** Every example of the README's API section: its shell block and the output shown after it. */
function readmeExamples(): { script: string; shown: string }[] {
  const api = README.slice(README.indexOf('\n## API'), README.indexOf('\n## Deploying'));
  return [...api.matchAll(/```sh\n([\s\S]*?)```[\s\S]*?```text\n([\s\S]*?)```/g)].map((m) => ({
    script: m[1] ?? '',
    shown: m[2] ?? '',
  }));
}

/** Output with what differs on every run (times, durations, request ids, bookmarks) blanked. */
const steady = (text: string): string =>
  text
    .replaceAll('\r', '')
    .replace(/dur=[\d.]+/g, 'dur=_')
    .replace(/^(X-Request-Id:) .*$/gim, '$1 _')
    .replace(/^(X-D1-Bookmark:) .*$/gim, '$1 _')
    .replace(/\b\d{13}\b/g, '_')
    .trimEnd();

/** Runs shell blocks in one bash, one after the other; the output of each. */
function runBlocks(blocks: string[]): { outputs: string[]; stderr: string; status: number | null } {
  const marker = '@@@ next block @@@';
  const run = spawnSync('bash', ['-euo', 'pipefail', '-c', blocks.join(`\necho '${marker}'\n`)], {
    env: { ...process.env, BASE: worker.url, ADMIN: ADMIN },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { outputs: run.stdout.split(`${marker}\n`), stderr: run.stderr, status: run.status };
}

const hasJq = spawnSync('jq', ['--version']).status === 0;

describe('end to end over HTTP against wrangler dev', () => {
  // The walk-through needs jq, as the README says; without it this proof cannot run here.
  it.skipIf(!hasJq)(
    'the README walk-through works as pasted, and its API examples after it, printing what the README shows',
    async () => {
      const walk = readmeWalkThrough();
      const examples = readmeExamples();
      expect(examples.length).toBe(3);
      const run = runBlocks([walk.script, ...examples.map((e) => e.script)]);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const [out = '', ...exampleOutputs] = run.outputs;
      expect(out).toMatch(/"status":"Succeeded","id":\d+,"name":"Ada Lovelace","version":1/);
      expect(out).toMatch(/"status":"Succeeded","id":\d+,"name":"Alan","version":1/);
      expect(out).toMatch(/^ETag: "1"\r?$/im);
      expect(out).toContain(
        '{"name":"Ada Lovelace","version":2,"fieldValues":[{"fieldName":"firstName","value":"Ada"},' +
          '{"fieldName":"lastName","value":"Lovelace"},{"fieldName":"stage","value":"customer"}]}',
      );
      expect(out).toContain('"code":"unprocessable"');
      expect(out).toContain('"pointer":"/0/fieldValues/0/value"');
      // Fresh state: the ids and versions the README shows.
      expect(steady(out)).toBe(steady(walk.shown));
      // The walk-through ends in an expected refusal (409 record_referenced): an answer, not an error.
      expect(out).toContain('"code":"record_referenced"');
      // What wrangler dev printed meanwhile arrives once the shell above has let the event loop go.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(worker.output()).not.toMatch(/ERROR|record_referenced/);
      exampleOutputs.forEach((output, i) =>
        expect(steady(output), examples[i]?.script).toBe(steady(examples[i]?.shown ?? '')),
      );
    },
  );

  it.skipIf(!hasJq)(
    'the API examples also run in reverse order on top of another walk-through (only ids and versions differ)',
    () => {
      const examples = readmeExamples();
      const run = runBlocks([readmeWalkThrough().script, ...[...examples].reverse().map((e) => e.script)]);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const numbersBlanked = (text: string): string => steady(text).replace(/\d+/g, 'N');
      run.outputs.slice(1).forEach((output, i) => {
        const example = examples[examples.length - 1 - i];
        expect(numbersBlanked(output), example?.script).toBe(numbersBlanked(example?.shown ?? ''));
      });
    },
  );

  let key = '';
  let workspaceId = 0;
  let objectId = 0;
  let records: any[] = [];

  it('creates, reads and patches over HTTP, with the cost in Server-Timing', async () => {
    expect((await http('GET', '/health')).body).toEqual({ status: 'ok' });
    const user = await http('POST', '/admin/users', ADMIN, { name: 'Ada' });
    expect(user.status).toBe(201);
    key = (await http('POST', `/admin/users/${user.body.id}/keys`, ADMIN)).body.key;
    workspaceId = (await http('POST', '/admin/workspaces', ADMIN, { name: 'Sales' })).body.id;
    expect(
      (await http('PUT', `/admin/workspaces/${workspaceId}/members/${user.body.id}`, ADMIN, { role: 'editor' })).body
        .role,
    ).toBe('editor');
    const object = await http('POST', '/admin/objects', ADMIN, {
      name: 'Contact',
      workspaceIds: [workspaceId],
      nameTemplate: '{firstName} {lastName}',
      fields: [
        { name: 'firstName', type: 'text', required: true },
        { name: 'lastName', type: 'text' },
        { name: 'stage', type: 'select', options: ['lead', 'customer'] },
        ...Array.from({ length: 10 }, (_, i) => ({ name: `n${i}`, type: 'integer' })),
      ],
    });
    objectId = object.body.id;
    expect((await http('GET', `/admin/objects/${objectId}`, ADMIN)).body).toEqual(object.body);

    const created = await http('POST', '/records/batch', key, [
      {
        objectId,
        fieldValues: [
          { fieldName: 'firstName', value: 'Ada' },
          { fieldName: 'lastName', value: 'Lovelace' },
        ],
      },
      {
        objectId,
        fieldValues: [
          { fieldName: 'firstName', value: 'Alan' },
          { fieldName: 'stage', value: 'lead' },
        ],
      },
    ]);
    expect(created.status).toBe(201);
    records = created.body.map((item: any) => item.record);
    expect(records.map((r) => r.name)).toEqual(['Ada Lovelace', 'Alan']);
    expect(created.headers.get('Server-Timing')).toMatch(
      /^d1;dur=[\d.]+;desc="2 round trips", do;dur=[\d.]+;desc="0 calls", rows;desc="\d+ written, \d+ read"$/,
    );

    const read = await http('GET', `/records/${records[0].id}`, key);
    expect(read.body).toEqual(records[0]);
    expect(read.headers.get('ETag')).toBe('"1"');

    const patched = await http(
      'PATCH',
      `/workspaces/${workspaceId}/records/${records[0].id}`,
      key,
      { fieldValues: [{ fieldName: 'stage', value: 'customer' }] },
      { 'If-Match': '"1"' },
    );
    expect(patched.body).toMatchObject({
      version: 2,
      fieldValues: [
        { fieldName: 'firstName', value: 'Ada' },
        { fieldName: 'lastName', value: 'Lovelace' },
        { fieldName: 'stage', value: 'customer' },
      ],
    });
    const stale = await http(
      'PATCH',
      `/workspaces/${workspaceId}/records/${records[0].id}`,
      key,
      { fieldValues: [] },
      { 'If-Match': '"1"' },
    );
    expect(stale.status).toBe(412);

    const batch = await http(
      'PATCH',
      '/records/batch',
      key,
      records.map((r) => ({ id: r.id, fieldValues: [{ fieldName: 'n0', value: 1 }] })),
    );
    expect(batch.body.map((item: any) => item.record.version)).toEqual([3, 2]);
    expect((await http('GET', `/workspaces/${workspaceId}/records/${records[1].id}`, key)).body).toEqual(
      batch.body[1].record,
    );
  });

  it('answers bad input with documented problems', async () => {
    expect((await http('POST', '/records/batch', key, [])).status).toBe(400);
    expect(
      (await http('POST', '/records/batch', key, [{ objectId, fieldValues: [{ fieldName: 'nope', value: 1 }] }]))
        .status,
    ).toBe(422);
    expect((await http('POST', '/records/batch', 'rk_wrong', [])).status).toBe(401);
    expect((await http('GET', '/records/abc', key)).status).toBe(400);
    expect((await http('GET', '/records/999999', key)).status).toBe(404);
    expect((await http('PATCH', '/records/batch', key, [{ id: records[0].id, ownedBy: 424242 }])).status).toBe(422);
    expect((await http('DELETE', '/records/batch', key)).status).toBe(405);
  });

  it('serializes 100 concurrent patches of one record over HTTP', async () => {
    const id = records[1].id;
    const before = (await http('GET', `/records/${id}`, key)).body.version;
    const answers = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        http('PATCH', `/workspaces/${workspaceId}/records/${id}`, key, {
          fieldValues: [{ fieldName: `n${i % 10}`, value: i + 1000 }],
        }),
      ),
    );
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers.map((a) => a.body.version).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 100 }, (_, i) => before + 1 + i),
    );
    expect((await http('GET', `/records/${id}`, key)).body.version).toBe(before + 100);
  });

  it('runs 10 concurrent batches over the same records in different orders', async () => {
    const more = await http(
      'POST',
      '/records/batch',
      key,
      Array.from({ length: 10 }, (_, i) => ({ objectId, fieldValues: [{ fieldName: 'firstName', value: `B${i}` }] })),
    );
    const ids: number[] = more.body.map((item: any) => item.record.id);
    const answers = await Promise.all(
      Array.from({ length: 10 }, (_, b) =>
        http(
          'PATCH',
          '/records/batch',
          key,
          [...ids]
            .sort(() => Math.random() - 0.5)
            .map((id) => ({ id, fieldValues: [{ fieldName: `n${b}`, value: b }] })),
        ),
      ),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    for (const id of ids) {
      const record = (await http('GET', `/records/${id}`, key)).body;
      expect(record.version).toBe(11);
      expect(record.fieldValues).toHaveLength(11);
    }
  });

  it('mixes singles and batches on the same records over HTTP: every change counted once', async () => {
    const more = await http(
      'POST',
      '/records/batch',
      key,
      Array.from({ length: 5 }, (_, i) => ({ objectId, fieldValues: [{ fieldName: 'firstName', value: `M${i}` }] })),
    );
    const ids: number[] = more.body.map((item: any) => item.record.id);
    const batches = Array.from({ length: 10 }, (_, b) =>
      http(
        'PATCH',
        `/workspaces/${workspaceId}/records/batch`,
        key,
        [...ids]
          .reverse()
          .slice(b % 2)
          .map((id) => ({ id, fieldValues: [{ fieldName: 'n0', value: 100 + b }] })),
      ),
    );
    const singles = Array.from({ length: 50 }, (_, i) =>
      http('PATCH', `/workspaces/${workspaceId}/records/${ids[i % 5]}`, key, {
        fieldValues: [{ fieldName: `n${1 + (i % 9)}`, value: 1000 + i }],
      }),
    );
    const answers = await Promise.all([...batches, ...singles]);
    expect(answers.map((a) => a.status)).toEqual(Array(60).fill(200));
    // Each record: version 1, then one per batch that listed it and per single: all distinct, no gap.
    for (const id of ids) {
      const listedBy = Array.from({ length: 10 }, (_, b) => [...ids].reverse().slice(b % 2)).filter((list) =>
        list.includes(id),
      ).length;
      const record = (await http('GET', `/records/${id}`, key)).body;
      expect(record.version).toBe(1 + listedBy + 10);
      const versions = answers
        .flatMap((a) => (Array.isArray(a.body) ? a.body.map((item: any) => item.record) : [a.body]))
        .filter((r) => r.id === id)
        .map((r) => r.version);
      expect([...versions].sort((x, y) => x - y)).toEqual(Array.from({ length: listedBy + 10 }, (_, i) => i + 2));
    }
  });

  it('40 concurrent patches of one record, one of them bad: 39 written, 1 refused, none failed by it', async () => {
    const doc = await http('POST', '/admin/objects', ADMIN, {
      name: 'Doc',
      workspaceIds: [workspaceId],
      nameTemplate: '{title}',
      fields: [
        { name: 'title', type: 'text' },
        { name: 'body', type: 'json' },
        ...Array.from({ length: 40 }, (_, i) => ({ name: `p${i}`, type: 'integer' })),
      ],
    });
    const created = await http('POST', '/records/batch', key, [
      { objectId: doc.body.id, fieldValues: [{ fieldName: 'title', value: 'T' }] },
    ]);
    const id = created.body[0].record.id;
    const nest = (levels: number): unknown => (levels === 0 ? 1 : [nest(levels - 1)]);
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        http('PATCH', `/workspaces/${workspaceId}/records/${id}`, key, {
          // Patch 13 holds what storage used to refuse for the whole group: a value nested past the json bound (64
          // levels; past the body's 100 it would be a 400 before any patch is grouped) and a name led by U+0000.
          fieldValues:
            i === 13
              ? [{ fieldName: 'body', value: nest(90) }]
              : [
                  { fieldName: `p${i}`, value: i },
                  { fieldName: 'title', value: i === 7 ? '\u0000T' : 'T' },
                ],
        }),
      ),
    );
    expect(answers.map((a) => a.status).filter((s) => s === 200)).toHaveLength(39);
    expect(answers[13]?.status).toBe(422);
    const record = (await http('GET', `/records/${id}`, key)).body;
    expect(record.version).toBe(40);
    expect(record.fieldValues.filter((v: any) => v.fieldName.startsWith('p'))).toHaveLength(39);
  });

  it(
    "a consumer following the change feed while 8 clients write ends with exactly the records' final " + 'states',
    async () => {
      const ws = (await http('POST', '/admin/workspaces', ADMIN, { name: 'Feed' })).body.id;
      const me = (await http('GET', '/me', key)).body.userId;
      await http('PUT', `/admin/workspaces/${ws}/members/${me}`, ADMIN, { role: 'editor' });
      const obj = (
        await http('POST', '/admin/objects', ADMIN, {
          name: 'Tick',
          workspaceIds: [ws],
          fields: [{ name: 'n', type: 'integer' }],
        })
      ).body.id;
      const ids: number[] = (
        await http(
          'POST',
          '/records/batch',
          key,
          Array.from({ length: 5 }, () => ({ objectId: obj, fieldValues: [] })),
        )
      ).body.map((i: any) => i.record.id);
      const mirror = new Map<number, any>();
      let after = '';
      let writing = true;
      const follow = async () => {
        for (;;) {
          const page = await http('GET', `/workspaces/${ws}/changes?limit=50${after}`, key);
          expect(page.status).toBe(200);
          for (const item of page.body.items) {
            const known = mirror.get(item.recordId);
            // A record's changes arrive in version order, each exactly once; folding them rebuilds it.
            expect(item.version).toBe((known?.version ?? 0) + 1);
            mirror.set(item.recordId, foldItem(known, item));
          }
          after = `&after=${encodeURIComponent(page.body.nextCursor)}`;
          if (page.body.items.length === 0 && !writing) return;
          if (page.body.items.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
        }
      };
      const consumer = follow();
      await Promise.all(
        Array.from({ length: 8 }, async (_, c) => {
          for (let i = 0; i < 10; i++) {
            const id = ids[(c + i) % ids.length] as number;
            if (i === 7 && c === 0) await http('DELETE', `/workspaces/${ws}/records/${id}`, key);
            else if (i % 4 === 3)
              await http(
                'PATCH',
                `/workspaces/${ws}/records/batch`,
                key,
                ids.map((one) => ({ id: one, fieldValues: [{ fieldName: 'n', value: c * 100 + i }] })),
              );
            else
              await http('PATCH', `/workspaces/${ws}/records/${id}`, key, {
                fieldValues: [{ fieldName: 'n', value: c * 100 + i }],
              });
          }
        }),
      );
      writing = false;
      await consumer;
      for (const id of ids) expect(mirror.get(id)).toEqual(byName((await http('GET', `/records/${id}`, key)).body));
    },
  );

  it(
    'workerd resolves dot segments (plain, %2e, \\) before the Worker sees the URL: /x/%2e%2e/health is' +
      ' answered as /health',
    async () => {
      for (const target of [
        '/x/%2e%2e/health',
        '/x/%2E%2E/health',
        '/x/.%2e/health',
        '/x/../health',
        '/x\\..\\health',
      ]) {
        expect(await rawRequest('GET', target), target).toEqual({ status: 200, body: { status: 'ok' } });
      }
      // So a path never reaches an admin operation without the admin token, however it is spelt.
      const sneaked = await rawRequest(
        'POST',
        '/workspaces/%2e%2e/admin/users',
        { 'Content-Type': 'application/json' },
        '{"name":"x"}',
      );
      expect([sneaked.status, sneaked.body.code]).toEqual([401, 'unauthorized']);
    },
  );

  it('never answered anything /openapi.json does not document', () => {
    expect(check.problems).toEqual([]);
  });
});
