import { env } from 'cloudflare:workers';
import { afterEach, describe, expect, it } from 'vitest';
import { newWriteId } from '../../src/core/ledger.ts';
import { sha256Hex } from '../../src/http/auth.ts';
import { DEFAULT_ROUTE } from '../../src/tenancy/routes.ts';
import type { WriteAnswer, WriteCall } from '../../src/write/write.ts';
import { admin, createOne, fv, newUser, newWorkspace } from '../integration/helpers.ts';
import { chaos } from './faults.ts';

/**
 * A record's queue answers a refusal it met unclosed, and the write's runner closes it. When another
 * run of the same id (a twin object, the Worker giving up on it) closed it first, the ledger's
 * outcome is the answer, never the queue's own problem.
 */

afterEach(() => {
  chaos.decide = undefined;
  chaos.onLost = undefined;
  chaos.delayMs = 0;
});

const run = async (id: number, call: WriteCall) => {
  const answer = (await env.RECORDS.get(env.RECORDS.idFromName(String(id))).run(call)) as WriteAnswer;
  return { status: answer.status, body: JSON.parse(new TextDecoder().decode(answer.body)) };
};

describe('a refusal the runner closes', () => {
  it('whose id another run closed as 503 meanwhile answers what the ledger holds, not the queue problem', async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const company = (
      await admin('POST', '/admin/objects', {
        name: 'Company',
        nameTemplate: '{title}',
        workspaceIds: [workspaceId],
        fields: [{ name: 'title', type: 'text', required: true }],
      })
    ).body;
    const contact = (
      await admin('POST', '/admin/objects', {
        name: 'Contact',
        nameTemplate: '{first}',
        workspaceIds: [workspaceId],
        fields: [
          { name: 'first', type: 'text', required: true },
          { name: 'company', type: 'reference', target: company.id },
        ],
      })
    ).body;
    const acme = await createOne(editor.key, company.id, [fv('title', 'Acme')]);
    await createOne(editor.key, contact.id, [fv('first', 'Ada'), fv('company', acme.id)]);
    const id = newWriteId();
    let injected = false;
    chaos.delayMs = 300;
    chaos.decide = (c) => {
      // The runner's close of the refused delete: just before it, another run of the same id
      // (a twin, the Worker giving up) closes it as 503.
      if (
        !injected &&
        c.target === 'd1' &&
        c.from === 'object' &&
        c.method === 'batch' &&
        c.sql.length === 1 &&
        /INSERT INTO writes/.test(c.sql[0] ?? '')
      ) {
        injected = true;
        void env.DB.prepare('INSERT INTO writes (id, outcome) VALUES (?, ?)').bind(id, '{"f":503}').run();
        return 'delay';
      }
      return undefined;
    };
    const answer = await run(acme.id, {
      id,
      requestId: 'turn-close',
      tenant: DEFAULT_ROUTE,
      keyHash: await sha256Hex(editor.key),
      write: { kind: 'patch', recordId: acme.id, workspaceId, patch: {}, action: 'delete' },
    });
    expect(injected).toBe(true);
    const ledger = await env.DB.prepare('SELECT outcome FROM writes WHERE id = ?')
      .bind(id)
      .first<{ outcome: string }>();
    expect(ledger?.outcome).toBe('{"f":503}');
    expect([answer.status, answer.body.code, answer.body.title]).toEqual([503, 'unavailable', 'Record busy']);
  });
});
