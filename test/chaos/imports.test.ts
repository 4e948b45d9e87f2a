import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { admin, call, newUser, newWorkspace } from '../integration/helpers.ts';
import { chaos, type OutgoingCall } from './faults.ts';

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const isChunk = (c: OutgoingCall | readonly string[]): boolean =>
  ('sql' in c ? c.sql : c).some((sql) => /UPDATE imports SET/.test(sql));

afterEach(() => {
  chaos.decide = undefined;
  chaos.restartAfter = undefined;
});

async function finished(key: string, id: number): Promise<any> {
  const until = Date.now() + 90_000;
  for (;;) {
    const answer = await call('GET', `/imports/${id}`, { key });
    if (answer.body?.status !== 'queued' && answer.body?.status !== 'running') return answer.body;
    if (Date.now() > until) throw new Error(`import still ${answer.body?.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe('imports under restarts, lost replies and failures', () => {
  it('an import whose object restarts after commits, loses replies, meets failures applies each row once', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const object = (
      await admin('POST', '/admin/objects', {
        name: 'Row',
        workspaceIds: [workspaceId],
        nameTemplate: '{n}',
        fields: [{ name: 'n', type: 'integer', required: true }],
      })
    ).body;
    // Chunk commits 1 and 2: the object resets right after; 3 and 4: the reply is lost; then two
    // chunks fail before they run.
    let commits = 0;
    chaos.restartAfter = (sql) => isChunk(sql) && ++commits <= 2;
    let chunks = 0;
    chaos.decide = (c) => {
      if (c.target !== 'd1' || c.method !== 'batch' || !isChunk(c)) return undefined;
      chunks += 1;
      return chunks === 3 || chunks === 4 ? 'lose' : chunks === 5 || chunks === 6 ? 'fail' : undefined;
    };
    const rows = Array.from({ length: 700 }, (_, i) => JSON.stringify({ fieldValues: [fv('n', i)] }));
    const answer = await call('POST', `/workspaces/${workspaceId}/imports?objectId=${object.id}`, {
      key: editor.key,
      raw: rows.join('\n'),
      headers: { 'Content-Type': 'application/x-ndjson' },
    });
    expect(answer.status).toBe(202);
    const done = await finished(editor.key, answer.body.id);
    expect(done).toMatchObject({ status: 'succeeded', rows: { processed: 700, created: 700, failed: 0 } });
    expect(commits).toBeGreaterThan(2);
    expect(chunks).toBeGreaterThan(6);
    const stored = await env.DB.prepare(
      `SELECT count(*) AS n, count(DISTINCT name) AS names,
         (SELECT count(*) FROM changes c JOIN records x ON x.id = c.record_id WHERE x.object_id = ?1) AS changes
       FROM records WHERE object_id = ?1`,
    )
      .bind(object.id)
      .first();
    expect(stored).toEqual({ n: 700, names: 700, changes: 700 });
  }, 120_000);
});
