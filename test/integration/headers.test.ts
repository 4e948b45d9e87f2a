import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import consolePage from '../../src/console/index.html';
import { call, createOne, download, fv, world } from './helpers.ts';

/** Headers every answer carries, the pages' policies, and an honest cost for a streamed answer. */

/** A page, as a browser asks for it (no key). */
const page = (path: string): Promise<Response> => exports.default.fetch(`http://records.test${path}`);

/** The text of `html` between the first `open` and the `close` after it. */
function between(html: string, open: string, close: string): string {
  const start = html.indexOf(open) + open.length;
  return html.slice(start, html.indexOf(close, start));
}

/** A policy's source for text by its SHA-256: `'sha256-<base64>'`. */
async function sha256Source(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return `'sha256-${btoa(String.fromCharCode(...digest))}'`;
}

/** A policy as a map of directive to its sources. */
function directives(policy: string | null): Map<string, string[]> {
  return new Map(
    (policy ?? '')
      .split(';')
      .map((part) => part.trim().split(/\s+/))
      .filter((words) => words[0] !== '')
      .map(([name = '', ...sources]) => [name, sources]),
  );
}

describe('headers', () => {
  it('every answer says nosniff: records, problems, lists, the document, the pages, a 404, a 405', async () => {
    const { editor, object, workspaceId } = await world();
    const record = await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const answers = [
      await call('GET', `/records/${record.id}`, { key: editor.key }),
      await call('GET', `/workspaces/${workspaceId}/records`, { key: editor.key }),
      await call('GET', '/records/1', {}),
      await call('POST', '/records/batch', { key: editor.key, body: {} }),
      await call('GET', '/openapi.json'),
      await call('GET', '/nowhere'),
      await call('PUT', '/health'),
    ];
    const pages = [await page('/console'), await page('/docs')];
    for (const answer of [...answers, ...pages]) expect(answer.headers.get('X-Content-Type-Options')).toBe('nosniff');
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 401, 400, 200, 404, 405]);
  });

  it('/console allows its own script and style alone, by hash; nothing frames it or sets its base', async () => {
    const answer = await page('/console');
    const policy = directives(answer.headers.get('Content-Security-Policy'));
    const html = await answer.text();
    expect(html).toBe(consolePage);
    expect(policy.get('default-src')).toEqual(["'none'"]);
    // Each hash is of the block's text exactly as served, computed here on its own.
    expect(policy.get('script-src')).toEqual([await sha256Source(between(html, '<script>', '</script>'))]);
    expect(policy.get('style-src')).toEqual([await sha256Source(between(html, '<style>', '</style>'))]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policy.get('base-uri')).toEqual(["'none'"]);
    // The page holds one script and one style, and no handler or style attribute a hash would not cover.
    expect(html.match(/<script/g)).toHaveLength(1);
    expect(html).not.toMatch(/\son[a-z]+="|\sstyle="/);
    // A revalidation carries the same policy.
    const again = await page('/console');
    expect(again.headers.get('Content-Security-Policy')).toBe(answer.headers.get('Content-Security-Policy'));
  });

  it('/docs runs scripts of this service alone, never inline ones', async () => {
    const answer = await page('/docs');
    const policy = directives(answer.headers.get('Content-Security-Policy'));
    expect(policy.get('script-src')).toEqual(["'self'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policy.get('base-uri')).toEqual(["'none'"]);
    expect(await answer.text()).not.toMatch(/<script>/);
  });

  it("a streamed export's Server-Timing states no cost it cannot know yet", async () => {
    const { editor, object, workspaceId } = await world();
    await createOne(editor.key, object.id, [fv('firstName', 'Ada')]);
    const res = await download(editor.key, `/workspaces/${workspaceId}/records/export?objectId=${object.id}`);
    expect(res.status).toBe(200);
    const timing = res.headers.get('Server-Timing') ?? '';
    expect(timing).toMatch(/^export;desc="streamed/);
    expect(timing).not.toMatch(/round trip|read|written/);
    expect((await res.text()).trim().split('\n')).toHaveLength(1);
    // Refused before streaming, it states what the refusal cost, as every answer does.
    const refused = await download(editor.key, `/workspaces/${workspaceId}/records/export?objectId=999999`);
    expect(refused.status).toBe(404);
    expect(refused.headers.get('Server-Timing')).toMatch(/^d1;dur=[\d.]+;desc="\d+ round trips?"/);
  });
});
