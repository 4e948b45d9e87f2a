import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserTestsRun, openTab, type Tab } from './chromium.ts';
import { startLocalWorker, type LocalWorker } from './server.ts';

/**
 * /console in headless Chromium, as a person with only an API key uses it: every step by the
 * page's own controls (found by their labels), every outcome checked on the page and in the API.
 */

const ADMIN = 'e2e-console-admin';
const here = (relative: string): string => fileURLToPath(new URL(relative, import.meta.url));
let worker: LocalWorker;
let tab: Tab | undefined;
let files: string;

async function call(method: string, path: string, key: string, body?: unknown): Promise<any> {
  const res = await fetch(`${worker.url}${path}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

async function user(name: string, admin = false): Promise<{ id: number; key: string }> {
  const { id } = await call('POST', '/admin/users', ADMIN, { name, ...(admin ? { admin } : {}) });
  const { key } = await call('POST', `/admin/users/${id}/keys`, ADMIN);
  return { id, key };
}

const fv = (fieldName: string, value: unknown) => ({ fieldName, value });
const create = async (key: string, objectId: number, fieldValues: unknown[]) =>
  (await call('POST', '/records/batch', key, [{ objectId, fieldValues }]))[0].record;

/** The names of the records the page lists, in order. */
const listed = `[...document.querySelectorAll('#records a')].map((a) => a.textContent).join('|')`;
const shows = (selector: string, text: string) =>
  `document.querySelector(${JSON.stringify(selector)})?.textContent.includes(${JSON.stringify(text)})`;
/** Clicks an element as a keyboard user would: focus it, press Enter. */
const activate = async (selector: string) => {
  await tab?.evaluate(`document.querySelector(${JSON.stringify(selector)}).focus()`);
  await tab?.press('Enter');
};
const linkNamed = (name: string, within = 'main') =>
  `[...document.querySelectorAll('${within} a')].find((a) => a.textContent === ${JSON.stringify(name)})`;
const setSelect = (selector: string, value: string) =>
  tab?.evaluate(`(() => { const s = document.querySelector(${JSON.stringify(selector)});
    s.value = ${JSON.stringify(value)};
    s.dispatchEvent(new Event('change', { bubbles: true })); })()`);

/** Picks a select's value in `page` and tells the page, as a person choosing would. */
const setSelectOn = (page: Tab, selector: string, value: string) =>
  page.evaluate(`(() => { const s = document.querySelector(${JSON.stringify(selector)});
    s.value = ${JSON.stringify(value)};
    s.dispatchEvent(new Event('change', { bubbles: true })); })()`);

/** Records of another object that share each workspace the console is tried in, as a real one holds. */
const NOISE = 30_000;

/**
 * Gives workspace `ws` an object of NOISE records (imported as one CSV file by `key`, an editor
 * there), which no view of the test's own objects may show or read past.
 */
async function noise(ws: number, key: string): Promise<{ id: number }> {
  const object = await call('POST', '/admin/objects', ADMIN, {
    name: `Noise ${ws}`,
    workspaceIds: [ws],
    fields: [{ name: 'n', type: 'integer' }],
  });
  const csv = ['n', ...Array.from({ length: NOISE }, (_, i) => String(i))].join('\n');
  const res = await fetch(`${worker.url}/workspaces/${ws}/imports?objectId=${object.id}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'text/csv' },
    body: csv,
  });
  if (res.status !== 202) throw new Error(`noise import: ${res.status} ${await res.text()}`);
  const { id } = (await res.json()) as { id: string };
  for (let tries = 0; tries < 1200; tries++) {
    const state = await call('GET', `/imports/${id}`, key);
    if (state.status === 'succeeded' && state.rows.created === NOISE) return object;
    if (state.status !== 'queued' && state.status !== 'running') throw new Error(`noise: ${JSON.stringify(state)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error('noise: the import did not finish');
}

/** A downloaded file's text, once the browser finished writing it. */
async function waitForFile(path: string): Promise<string> {
  for (let tries = 0; tries < 100; tries++) {
    if (existsSync(path)) return readFileSync(path, 'utf8');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no download at ${path}`);
}

beforeAll(async () => {
  worker = await startLocalWorker({ vars: { ADMIN_TOKEN: ADMIN } });
  files = mkdtempSync(join(tmpdir(), 'console-files-'));
});

afterAll(async () => {
  await tab?.close();
  await worker?.stop();
  if (files) rmSync(files, { recursive: true, force: true });
});

describe('/console in headless Chromium', () => {
  it.skipIf(!browserTestsRun)(
    'a person with a key finds, opens, saves, meets a conflict, imports, sees live changes and history; ' +
      'an administrator adds a field',
    async () => {
      const ada = await user('Ada');
      const bob = await user('Bob');
      const boss = await user('Boss', true);
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Sales' });
      for (const member of [ada, bob]) {
        await call('PUT', `/admin/workspaces/${ws}/members/${member.id}`, ADMIN, { role: 'editor' });
      }
      const contact = await call('POST', '/admin/objects', ADMIN, {
        name: 'Contact',
        workspaceIds: [ws],
        nameTemplate: '{firstName} {lastName}',
        fields: [
          { name: 'firstName', type: 'text', required: true },
          { name: 'lastName', type: 'text' },
          { name: 'stage', type: 'select', options: ['lead', 'customer'] },
          { name: 'email', type: 'email' },
        ],
      });
      const company = await call('POST', '/admin/objects', ADMIN, {
        name: 'Company',
        workspaceIds: [ws],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text', required: true },
          { name: 'ceo', type: 'reference', target: contact.id },
        ],
      });
      const lovelace = await create(ada.key, contact.id, [fv('firstName', 'Ada'), fv('lastName', 'Lovelace')]);
      await create(ada.key, contact.id, [fv('firstName', 'Alan'), fv('lastName', 'Turing'), fv('stage', 'lead')]);
      const hopper = await create(ada.key, contact.id, [
        fv('firstName', 'Grace'),
        fv('lastName', 'Hopper'),
        fv('stage', 'lead'),
      ]);
      const acme = await create(ada.key, company.id, [fv('title', 'Acme'), fv('ceo', lovelace.id)]);
      await noise(ws, bob.key);

      // The key, pasted into the field a screen reader announces as "API key"; kept for the tab only.
      tab = await openTab(`${worker.url}/console`);
      const page = tab;
      await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
      expect(await page.accessible('textbox', 'API key')).toHaveLength(1);
      await page.type('#api-key', ada.key);
      await page.press('Enter');
      await page.waitFor(linkNamed('Sales', 'nav'), 'the workspace in the navigation');
      expect(await page.evaluate(`sessionStorage.getItem('record-console-key')`)).toBe(ada.key);
      expect(await page.evaluate('localStorage.length')).toBe(0);
      expect(await page.evaluate(`document.querySelector('#api-key').value`)).toBe('');
      expect(await page.evaluate(`document.querySelector('#key-form').getClientRects().length`)).toBe(0);

      // The workspace's records, as links named by the records' names; a search box narrows them.
      await activate(`nav a[href="#/workspaces/${ws}"]`);
      await page.waitFor(`${listed} === 'Ada Lovelace|Alan Turing|Grace Hopper'`, 'the records, by name');
      expect(await page.accessible('link', 'Grace Hopper')).toHaveLength(1);
      expect(await page.accessible('searchbox', 'Search records')).toHaveLength(1);
      await page.type('#search', 'gra');
      await page.waitFor(`${listed} === 'Grace Hopper'`, 'the search to narrow the list');
      await page.evaluate(`(() => { const s = document.querySelector('#search'); s.value = '';
        s.dispatchEvent(new Event('input')); })()`);
      // A filter by a field, and a sort.
      await setSelect('#filter-field', 'stage');
      await setSelect('#filter-op', 'eq');
      // A select field's value is picked from its options.
      expect(
        await page.evaluate(`[...document.querySelector('#filter-value').options].map((o) => o.value).join('|')`),
      ).toBe('lead|customer');
      await setSelect('#filter-value', 'lead');
      await page.evaluate(`document.querySelector('#filter-value').form.requestSubmit()`);
      await page.waitFor(`${listed} === 'Alan Turing|Grace Hopper'`, 'the filter stage is lead');
      await setSelect('#sort', 'name:desc');
      await page.waitFor(`${listed} === 'Grace Hopper|Alan Turing'`, 'the sort by name, descending');
      await activate('#filters button');
      await setSelect('#sort', 'createdAt:desc');
      await page.waitFor(`${listed} === 'Grace Hopper|Alan Turing|Ada Lovelace'`, 'newest first, unfiltered');

      // Someone else creates a record: it appears within 2 s, without a reload, and a person on a record's
      // link with the keyboard stays on it as the list is read again.
      await page.evaluate(`document.querySelector('#records a[href="#/records/${hopper.id}"]').focus()`);
      const before = await page.evaluate<number>('performance.timeOrigin');
      await create(bob.key, contact.id, [fv('firstName', 'Zed'), fv('lastName', 'Live')]);
      const started = Date.now();
      await page.waitFor(`${listed}.startsWith('Zed Live|')`, 'the record created elsewhere', 2000);
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await page.evaluate('performance.timeOrigin')).toBe(before);
      await page.waitFor(shows('#live', 'Zed Live'), 'the live change');
      expect(await page.evaluate(`document.activeElement?.getAttribute('href')`)).toBe(`#/records/${hopper.id}`);
      // It came over the live stream: the page read no page of the feed.
      const feedReads = `performance.getEntriesByType('resource')
        .filter((e) => e.name.includes('/changes?after')).length`;
      expect(await page.evaluate('state.feed.socket?.readyState')).toBe(1);
      expect(await page.evaluate(feedReads)).toBe(0);
      // The socket lost: the page falls back to reading the feed, and the next change still shows.
      await page.evaluate('state.feed.socket.close(4000)');
      await create(bob.key, contact.id, [fv('firstName', 'Yan'), fv('lastName', 'Polled')]);
      await page.waitFor(`${listed}.startsWith('Yan Polled|')`, 'the record created while polling');
      expect(await page.evaluate<number>(feedReads)).toBeGreaterThan(0);

      // A record created on the page, from the object's fields.
      await page.type('#new-firstName', 'Marie');
      await page.type('#new-lastName', 'Curie');
      await page.press('Enter');
      await page.waitFor(linkNamed('Marie Curie', '#created'), 'the created record');

      // A record: its fields labelled by their names; a field saved with Enter.
      await activate(`#records a[href="#/records/${hopper.id}"]`);
      await page.waitFor(`document.querySelector('main h2')?.textContent === 'Grace Hopper'`, 'the record');
      await page.waitFor(`document.querySelector('#field-lastName')`, 'its fields');
      expect(await page.accessible('textbox', 'lastName')).toHaveLength(1);
      expect((await page.accessible('button', 'Save')).length).toBe(4);
      await page.type('#field-lastName', 'Hopper-Murray');
      await page.press('Enter');
      await page.waitFor(shows('#record-meta', 'version 2'), 'the saved field');
      expect((await call('GET', `/records/${hopper.id}`, ada.key)).fieldValues).toContainEqual(
        fv('lastName', 'Hopper-Murray'),
      );

      // Someone else saves the same field while the person types: the page shows their change at once and
      // keeps what is typed; the save is refused, shows their newer value and keeps the typed one to save again.
      await page.type('#field-lastName', 'Mine');
      await call('PATCH', `/workspaces/${ws}/records/${hopper.id}`, bob.key, {
        fieldValues: [fv('lastName', 'Hopper (Bob)')],
      });
      await page.waitFor(shows('#moved', 'what you are typing in lastName is kept'), 'their change, shown live');
      expect(await page.evaluate(`document.querySelector('#field-lastName').value`)).toBe('Mine');
      await activate('form[data-field="lastName"] button');
      await page.waitFor(shows('#conflict', 'Hopper (Bob)'), 'the conflict');
      expect(await page.evaluate(`document.querySelector('#conflict').textContent`)).toMatch(
        new RegExp(
          '^Not saved: someone else changed this record first \\(now version 3\\)\\. ' +
            'lastName is now “Hopper \\(Bob\\)”; your “Mine” was not saved and is still in the box\\.',
        ),
      );
      expect(await page.evaluate(`document.querySelector('#field-lastName').value`)).toBe('Mine');
      expect(await page.evaluate(`document.querySelector('#status').textContent`)).not.toContain('Saved');
      expect(await page.evaluate(`document.querySelector('#conflict').getAttribute('role')`)).toBe('alert');
      const stored = await call('GET', `/records/${hopper.id}`, ada.key);
      expect([stored.version, stored.fieldValues[1]]).toEqual([3, fv('lastName', 'Hopper (Bob)')]);

      // Its history, newest first, each change with who, and every field from and to.
      await page.waitFor(`document.querySelectorAll('#history > li').length === 3`, 'three changes');
      const history = await page.evaluate<string[]>(
        `[...document.querySelectorAll('#history > li')].map((li) =>
          li.innerText.replace(/\\n+/g, '\\n').replace(/, [^\\n]*\\d[^\\n]*/, '').trim())`,
      );
      expect(history).toEqual([
        `Version 3 updated by user ${bob.id}\nlastName: Hopper-Murray → Hopper (Bob)`,
        'Version 2 updated by you\nlastName: Hopper → Hopper-Murray',
        'Version 1 created by you\nfirstName: (none) → Grace\nlastName: (none) → Hopper\nstage: (none) → lead',
      ]);
      await page.evaluate(`document.querySelector('#status').textContent = ''`);
      mkdirSync(here('generated'), { recursive: true });
      const shot = await page.send('Page.captureScreenshot', { format: 'png' });
      writeFileSync(here('generated/console-record.png'), Buffer.from(shot.data, 'base64'));

      // Someone else changes another field while the person edits one: the save goes on top, theirs is kept.
      await page.type('#field-firstName', 'Grace B.');
      await call('PATCH', `/workspaces/${ws}/records/${hopper.id}`, bob.key, {
        fieldValues: [fv('stage', 'customer')],
      });
      await page.waitFor(shows('#moved', 'now version 4'), 'the other change, shown live');
      await activate('form[data-field="firstName"] button');
      await page.waitFor(shows('#record-meta', 'version 5'), 'the save on top of theirs');
      const both = await call('GET', `/records/${hopper.id}`, ada.key);
      expect(both.fieldValues).toEqual(
        expect.arrayContaining([fv('firstName', 'Grace B.'), fv('stage', 'customer'), fv('lastName', 'Hopper (Bob)')]),
      );

      // References are links; what references a record is listed.
      await page.evaluate(`location.hash = '#/records/${acme.id}'`);
      await page.waitFor(linkNamed('Ada Lovelace', '#record-fields'), 'the reference as a link');
      // Its history names the record referenced, not its id.
      await page.waitFor(shows('#history', 'ceo: (none) → Ada Lovelace'), 'the reference in the history by name');
      // The box offers the target's records by name as the person types.
      await page.evaluate(`(() => { const box = document.querySelector('#field-ceo'); box.value = 'gra';
        box.dispatchEvent(new Event('input')); })()`);
      await page.waitFor(
        `[...document.querySelectorAll('#field-ceo-choices option')].some((o) => o.label.startsWith('Grace B.'))`,
        'the names offered',
      );
      expect(
        await page.evaluate(`[...document.querySelectorAll('#field-ceo-choices option')].map((o) => o.value)`),
      ).toContain(String(hopper.id));
      await activate(`#record-fields a[href="#/records/${lovelace.id}"]`);
      await page.waitFor(linkNamed('Acme', '#referenced-by'), 'what references Ada');

      // A 3,000-row CSV with a bad row, imported with a live progress bar; the bad row listed.
      const rows = Array.from({ length: 3000 }, (_, i) => `Person,N${i + 1},${i === 1499 ? 'won' : 'lead'}`);
      writeFileSync(join(files, 'people.csv'), `firstName,lastName,stage\n${rows.join('\n')}\n`);
      await page.evaluate(`location.hash = '#/workspaces/${ws}'`);
      await page.waitFor(`document.querySelector('#import-file')`, 'the import form');
      expect(await page.accessible('progressbar', 'Import progress')).toHaveLength(1);
      await page.evaluate(`(() => { window.seen = [];
        new MutationObserver(() => {
          const p = document.querySelector('#import-progress');
          seen.push([p.value, p.max]);
        })
          .observe(document.querySelector('#import-progress'), { attributes: true }); })()`);
      const { result } = await page.send('Runtime.evaluate', { expression: `document.querySelector('#import-file')` });
      await page.send('DOM.setFileInputFiles', { files: [join(files, 'people.csv')], objectId: result.objectId });
      await activate('#import button');
      await page.waitFor(shows('#import-text', 'succeeded'), 'the import to finish', 120_000);
      const seen = await page.evaluate<[number, number][]>('window.seen');
      expect(seen.some(([value, max]) => max === 3000 && value > 0 && value < 3000)).toBe(true);
      expect(seen.at(-1)).toEqual([3000, 3000]);
      expect(await page.evaluate(`document.querySelector('#import-text').textContent`)).toBe(
        'succeeded: 3000 of 3000 rows, 2999 created, 0 updated, 0 unchanged, 1 failed',
      );
      await page.waitFor(
        shows('#import-errors', 'Row 1500: stage: expected one of the options (was "won")'),
        'the bad row',
      );
      const count = await call('POST', `/workspaces/${ws}/records/query`, ada.key, {
        filter: { field: 'objectId', op: 'eq', value: contact.id },
        count: true,
        limit: 1,
      });
      expect(count.count).toEqual({ value: 6 + 2999, exact: true });

      // An export, downloaded as a file.
      await page.send('Page.setDownloadBehavior', { behavior: 'allow', downloadPath: files });
      await activate('#export button');
      await page.waitFor(shows('#exported', 'Downloaded Contact.csv'), 'the export');
      const exported = await waitForFile(join(files, 'Contact.csv'));
      expect(exported.split('\r\n').filter(Boolean)).toHaveLength(1 + 6 + 2999);
      expect(exported).toMatch(/^id,name,version,updatedAt,firstName,lastName,stage,email\r\n/);

      // A summary: the contacts counted by stage, as the API counts them.
      await page.evaluate(`document.querySelector('#summary-group').value = 'stage'`);
      await activate('#summary button');
      await page.waitFor(shows('#summary-note', `groups of ${6 + 2999} records`), 'the summary');
      const table = await page.evaluate<string[][]>(
        `[...document.querySelectorAll('#summary-table tr')].map((tr) => [...tr.children].map((c) => c.textContent))`,
      );
      const byStage = await call('POST', `/workspaces/${ws}/records/aggregate`, ada.key, {
        objectId: contact.id,
        groupBy: [{ field: 'stage' }],
        measures: [{ op: 'count' }],
      });
      expect(table).toEqual([
        ['stage', 'Records'],
        ...byStage.groups.map((g: { key: { stage: string | null }; values: number[] }) => [
          g.key.stage ?? '(blank)',
          String(g.values[0]),
        ]),
      ]);
      expect(table.some((row) => row[0] === 'lead' && Number(row[1]) >= 2999)).toBe(true);

      // A file as it comes: columns mapped to fields by name (case and spacing aside), one no field takes skipped.
      writeFileSync(
        join(files, 'zeldas.csv'),
        'First Name,Last_name,STAGE,Notes\r\nZelda,Fitzgerald,customer,wrote\r\nZelda,Sayre,lead,x\r\n',
      );
      const picked = await page.send('Runtime.evaluate', { expression: `document.querySelector('#import-file')` });
      await page.send('DOM.setFileInputFiles', {
        files: [join(files, 'zeldas.csv')],
        objectId: picked.result.objectId,
      });
      await page.waitFor(`document.querySelectorAll('#import-mapping select').length === 4`, 'the proposed mapping');
      const proposed = await page.evaluate<string[][]>(
        `[...document.querySelectorAll('#import-mapping tbody tr')].map((tr) =>
          [tr.querySelector('th').textContent, tr.querySelector('select').value, tr.lastChild.textContent])`,
      );
      expect(proposed).toEqual([
        ['First Name', 'firstName', 'Zelda · Zelda'],
        ['Last_name', 'lastName', 'Fitzgerald · Sayre'],
        ['STAGE', 'stage', 'customer · lead'],
        ['Notes', '', 'wrote · x'],
      ]);
      expect(await page.accessible('combobox', 'Field for column Notes')).toHaveLength(1);
      await activate('#import button');
      await page.waitFor(shows('#import-text', 'succeeded: 2 of 2 rows, 2 created'), 'the mapped import', 60_000);

      // The export holds exactly the records in view: here, the search for them, by name.
      await setSelect('#sort', 'name:asc');
      await page.evaluate(`(() => { const s = document.querySelector('#search');
        s.value = 'zelda'; s.dispatchEvent(new Event('input')); })()`);
      await page.waitFor(shows('#count', '2 Contact records found'), 'the search');
      rmSync(join(files, 'Contact.csv'));
      await activate('#export button');
      await page.waitFor(shows('#exported', 'Downloaded Contact.csv'), 'the export of the view');
      const inView = (await waitForFile(join(files, 'Contact.csv'))).split('\r\n').filter(Boolean);
      expect(inView.slice(1).map((line) => line.split(',').slice(4, 7))).toEqual([
        ['Zelda', 'Fitzgerald', 'customer'],
        ['Zelda', 'Sayre', 'lead'],
      ]);

      // Readable at a phone's width: nothing wider than the screen.
      await page.send('Emulation.setDeviceMetricsOverride', {
        width: 360,
        height: 740,
        deviceScaleFactor: 1,
        mobile: true,
      });
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
      await page.evaluate(`location.hash = '#/records/${hopper.id}'`);
      await page.waitFor(`document.querySelector('#field-lastName')`, 'the record at phone width');
      expect(await page.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(360);
      await page.send('Emulation.setDeviceMetricsOverride', {
        width: 1280,
        height: 900,
        deviceScaleFactor: 1,
        mobile: false,
      });

      // An administrator of the tenant: users, keys, workspaces, objects; a field added to an object.
      await activate('#forget');
      await page.waitFor(`!document.querySelector('#key-form').hidden`, 'the key form again');
      expect(await page.evaluate(`sessionStorage.length`)).toBe(0);
      await page.type('#api-key', boss.key);
      await page.press('Enter');
      await page.waitFor(linkNamed('Administration', 'nav'), 'the administration link');
      await activate(`nav a[href="#/admin"]`);
      await page.waitFor(shows('#main table', 'Bob'), 'the users');
      expect(await page.evaluate(`document.querySelector('main').innerText`)).toContain('Sales (id');
      await activate(`button[aria-label="Show keys of Ada"]`);
      await page.waitFor(`document.querySelector('main table code')?.textContent.endsWith('…')`, "Ada's key prefix");
      await setSelect('#add-field select[name="object"]', String(contact.id));
      await page.type('#add-field input[name="name"]', 'city');
      await page.press('Enter');
      await page.waitFor(shows('#field-added', 'Added city to Contact (now version 2)'), 'the added field');
      const definition = await call('GET', `/admin/objects/${contact.id}`, ADMIN);
      expect(definition.fields.map((f: { name: string }) => f.name)).toEqual([
        'firstName',
        'lastName',
        'stage',
        'email',
        'city',
      ]);
    },
    300_000,
  );

  it.skipIf(!browserTestsRun)(
    'imports airports.csv and movies.json as they come: a mapping proposed by name, the values of rows refused',
    async () => {
      const ivy = await user('Ivy');
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Atlas' });
      await call('PUT', `/admin/workspaces/${ws}/members/${ivy.id}`, ADMIN, { role: 'editor' });
      const airport = await call('POST', '/admin/objects', ADMIN, {
        name: 'Airport',
        workspaceIds: [ws],
        nameTemplate: '{airport}',
        fields: [
          { name: 'iata', type: 'text', unique: true },
          { name: 'airport', type: 'text' },
          { name: 'city', type: 'text' },
          { name: 'state', type: 'text' },
          { name: 'country', type: 'text' },
          { name: 'latitude', type: 'number' },
          { name: 'longitude', type: 'number' },
        ],
      });
      const movie = await call('POST', '/admin/objects', ADMIN, {
        name: 'Movie',
        workspaceIds: [ws],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text', required: true },
          { name: 'usGross', type: 'integer' },
          { name: 'releaseDate', type: 'text' },
          { name: 'imdbRating', type: 'number' },
          { name: 'majorGenre', type: 'text' },
        ],
      });
      await noise(ws, ivy.key);
      // The files' first lines as they come (vega-datasets): a column `name` no field may take, keys with
      // spaces, a pretty-printed JSON array, blanks as null, and a title written as a number.
      writeFileSync(
        join(files, 'airports.csv'),
        'iata,name,city,state,country,latitude,longitude\n' +
          '00M,Thigpen ,Bay Springs,MS,USA,31.95376472,-89.23450472\n' +
          '00R,Livingston Municipal,Livingston,TX,USA,30.68586111,-95.01792778\n' +
          '00V,Meadow Lake,Colorado Springs,CO,USA,38.94574889,-104.5698933\n',
      );
      const movies = [
        { Title: 'The Land Girls', 'US Gross': 146083, 'Worldwide Gross': 146083, 'Release Date': 'Jun 12 1998' },
        { Title: 'First Love, Last Rites', 'US Gross': 10876, 'Release Date': 'Aug 07 1998', 'IMDB Rating': 6.9 },
        { Title: 1776, 'US Gross': 0, 'Release Date': 'Nov 08 1972', 'Major Genre': 'Musical', 'IMDB Rating': null },
      ];
      writeFileSync(join(files, 'movies.json'), JSON.stringify(movies, null, 2));
      const page = await openTab(`${worker.url}/console`);
      const mapping = `[...document.querySelectorAll('#import-mapping tbody tr')].map((tr) =>
          [tr.querySelector('th').textContent, tr.querySelector('select').value])`;
      const pick = async (name: string) => {
        const { result } = await page.send('Runtime.evaluate', {
          expression: `document.querySelector('#import-file')`,
        });
        await page.send('DOM.setFileInputFiles', { files: [join(files, name)], objectId: result.objectId });
      };
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', ivy.key);
        await page.press('Enter');
        await page.waitFor(`document.querySelector('#object option[value="${airport.id}"]')`, 'the objects');
        await setSelectOn(page, '#object', String(airport.id));
        await page.waitFor(shows('#count', '0 Airport records found'), 'no airport yet');

        await pick('airports.csv');
        await page.waitFor(`document.querySelectorAll('#import-mapping select').length === 7`, 'the proposed mapping');
        expect(await page.evaluate(mapping)).toEqual([
          ['iata', 'iata'],
          ['name', ''],
          ['city', 'city'],
          ['state', 'state'],
          ['country', 'country'],
          ['latitude', 'latitude'],
          ['longitude', 'longitude'],
        ]);
        // The person sends the column `name` to the field that names an airport.
        await setSelectOn(page, '#import-mapping select[data-source="name"]', 'airport');
        await page.evaluate(`document.querySelector('#import button').click()`);
        const ended = `/^(succeeded|failed|cancelled)/.test(document.querySelector('#import-text').textContent)`;
        await page.waitFor(ended, 'the airports', 120_000);
        expect(await page.evaluate(`document.querySelector('#import-text').textContent`)).toBe(
          'succeeded: 3 of 3 rows, 3 created, 0 updated, 0 unchanged, 0 failed',
        );
        await page.waitFor(`${listed} === 'Livingston Municipal|Meadow Lake|Thigpen'`, 'the airports, by name');
        const thigpen = await call('POST', `/workspaces/${ws}/records/query`, ivy.key, {
          filter: { field: 'iata', op: 'eq', value: '00M' },
        });
        expect(thigpen.items[0].fieldValues).toEqual(
          expect.arrayContaining([fv('airport', 'Thigpen '), fv('latitude', 31.95376472), fv('country', 'USA')]),
        );

        await setSelectOn(page, '#object', String(movie.id));
        await page.waitFor(shows('#count', '0 Movie records found'), 'no movie yet');
        await pick('movies.json');
        await page.waitFor(`document.querySelectorAll('#import-mapping select').length === 6`, 'the keys proposed');
        expect(await page.evaluate(mapping)).toEqual([
          ['Title', 'title'],
          ['US Gross', 'usGross'],
          ['Worldwide Gross', ''],
          ['Release Date', 'releaseDate'],
          ['IMDB Rating', 'imdbRating'],
          ['Major Genre', 'majorGenre'],
        ]);
        await page.evaluate(`document.querySelector('#import button').click()`);
        await page.waitFor(shows('#import-text', 'succeeded: 3 of 3 rows, 2 created'), 'the movies', 120_000);
        expect(await page.evaluate(`document.querySelector('#import-text').textContent`)).toContain('1 failed');
        // The row refused says which column, and shows what it held.
        await page.waitFor(
          shows('#import-errors', 'Row 3: Title → title: expected string (was "1776")'),
          'the refused row',
        );
        await page.waitFor(`${listed} === 'First Love, Last Rites|The Land Girls'`, 'the movies, by name');
        const girls = await call('POST', `/workspaces/${ws}/records/query`, ivy.key, {
          filter: { field: 'objectId', op: 'eq', value: movie.id },
          search: 'land girls',
        });
        expect(girls.items[0].fieldValues).toEqual(
          expect.arrayContaining([fv('usGross', 146083), fv('releaseDate', 'Jun 12 1998')]),
        );
      } finally {
        await page.close();
      }
    },
    300_000,
  );
});

describe('/console over HTTP', () => {
  it.skipIf(!browserTestsRun)(
    'uploads into a file field with a progress bar, shows an image as a thumbnail and links the others',
    async () => {
      const cleo = await user('Cleo');
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Cases' });
      await call('PUT', `/admin/workspaces/${ws}/members/${cleo.id}`, ADMIN, { role: 'editor' });
      const object = await call('POST', '/admin/objects', ADMIN, {
        name: 'Case',
        workspaceIds: [ws],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text', required: true },
          { name: 'docs', type: 'file', multiple: true },
        ],
      });
      const made = await create(cleo.key, object.id, [fv('title', 'Broken window')]);
      await noise(ws, cleo.key);
      // A 1x1 PNG and 2 MiB of text: an image shown as a thumbnail, a file shown as a link.
      const png = Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==',
        'base64',
      );
      writeFileSync(join(files, 'photo.png'), png);
      writeFileSync(join(files, 'notes.txt'), 'n'.repeat(2 * 1024 * 1024));
      const page = await openTab(`${worker.url}/console`);
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', cleo.key);
        await page.press('Enter');
        await page.waitFor(linkNamed('Cases', 'nav'), 'the workspace');
        await page.evaluate(`location.hash = '#/workspaces/${ws}'`);
        await page.waitFor(linkNamed('Broken window', '#records'), 'the record in the list');
        await page.evaluate(`location.hash = '#/records/${made.id}'`);
        await page.waitFor(`document.querySelector('input[type=file][aria-label="Upload into docs"]')`, 'the picker');
        await page.evaluate(`(() => { window.progressSeen = [];
          const bar = document.querySelector('progress[aria-label="Uploading into docs"]');
          new MutationObserver(() => progressSeen.push([bar.hidden, bar.value]))
            .observe(bar, { attributes: true }); })()`);
        const { result } = await page.send('Runtime.evaluate', {
          expression: `document.querySelector('input[type=file][aria-label="Upload into docs"]')`,
        });
        await page.send('DOM.setFileInputFiles', {
          files: [join(files, 'photo.png'), join(files, 'notes.txt')],
          objectId: result.objectId,
        });
        await page.waitFor(
          `document.querySelector('#field-docs').value.includes('notes.txt')`,
          'both files uploaded into the box',
        );
        // The bar was shown while the bytes went up, and hidden once they were in.
        const seen = await page.evaluate<[boolean, number][]>('window.progressSeen');
        expect(seen.some(([hidden]) => !hidden)).toBe(true);
        expect(seen.at(-1)?.[0]).toBe(true);
        await page.evaluate(`document.querySelector('form[data-field="docs"] button').focus()`);
        await page.press('Enter');
        await page.waitFor(shows('#record-meta', 'version 2'), 'the save');
        const saved = await call('GET', `/records/${made.id}`, cleo.key);
        const docs = saved.fieldValues.find((f: { fieldName: string }) => f.fieldName === 'docs').value;
        expect(docs.map((f: { name: string; size: number }) => [f.name, f.size])).toEqual([
          ['photo.png', png.length],
          ['notes.txt', 2 * 1024 * 1024],
        ]);
        // The image as a thumbnail, loaded with the key; the text file as a link.
        await page.waitFor(
          `(() => { const img = document.querySelector('form[data-field="docs"] img.thumb');
            return img && img.alt === 'photo.png' && img.complete && img.naturalWidth === 1; })()`,
          'the thumbnail',
        );
        expect(await page.evaluate(shows('form[data-field="docs"] a.file', 'notes.txt'))).toBe(true);
      } finally {
        await page.close();
      }
    },
    300_000,
  );

  it.skipIf(!browserTestsRun)(
    'an administrator adds a formula: a wrong one is shown at its position, a right one read-only on records, ' +
      'as a lookup is',
    async () => {
      const fay = await user('Fay', true);
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Orders' });
      await call('PUT', `/admin/workspaces/${ws}/members/${fay.id}`, ADMIN, { role: 'editor' });
      const customer = await call('POST', '/admin/objects', ADMIN, {
        name: 'Customer',
        workspaceIds: [ws],
        nameTemplate: '{who}',
        fields: [{ name: 'who', type: 'text' }],
      });
      const object = await call('POST', '/admin/objects', ADMIN, {
        name: 'Order',
        workspaceIds: [ws],
        nameTemplate: '{item}',
        fields: [
          { name: 'item', type: 'text', required: true },
          { name: 'price', type: 'number' },
          { name: 'count', type: 'integer' },
          { name: 'buyer', type: 'reference', target: customer.id },
          { name: 'buyerName', type: 'lookup', reference: 'buyer', field: 'who' },
        ],
      });
      // Each customer sums up the orders referencing it.
      const spent = await call('PUT', `/admin/objects/${customer.id}`, ADMIN, {
        name: 'Customer',
        workspaceIds: [ws],
        nameTemplate: '{who}',
        fields: [
          { name: 'who', type: 'text' },
          { name: 'spent', type: 'rollup', from: { objectId: object.id, field: 'buyer' }, op: 'sum', of: 'price' },
        ],
      });
      expect(spent.version).toBe(2);
      const grace = await create(fay.key, customer.id, [fv('who', 'Grace')]);
      const made = await create(fay.key, object.id, [
        fv('item', 'Lamp'),
        fv('price', 4.5),
        fv('count', 4),
        fv('buyer', grace.id),
      ]);
      await noise(ws, fay.key);
      const page = await openTab(`${worker.url}/console`);
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', fay.key);
        await page.press('Enter');
        await page.waitFor(linkNamed('Administration', 'nav'), 'the administration link');
        await page.evaluate(`location.hash = '#/admin'`);
        await page.waitFor(`document.querySelector('#add-field')`, 'the field form');
        await page.evaluate(`(() => { const f = document.querySelector('#add-field');
          f.elements.object.value = '${object.id}'; f.elements.type.value = 'formula';
          f.elements.resultType.value = 'number'; })()`);
        await page.type('#add-field input[name="name"]', 'total');
        await page.type('#add-field input[name="expression"]', 'price * "x"');
        await page.evaluate(`document.querySelector('#add-field button').focus()`);
        await page.press('Enter');
        // The problem is shown under the expression, its caret at the position the API names.
        const shown = await page.waitFor<string>(
          `document.querySelector('#field-added pre.formula-error')?.textContent`,
          'the formula error',
        );
        expect(shown.split('\n')[1]).toMatch(/^ {8}\^ /);
        expect(
          await page.evaluate(`(() => { const e = document.querySelector('#add-field input[name="expression"]');
            return [e.selectionStart, e.getAttribute('aria-invalid'), document.activeElement === e]; })()`),
        ).toEqual([8, 'true', true]);
        expect((await call('GET', `/admin/objects/${object.id}`, ADMIN)).version).toBe(1);

        await page.type('#add-field input[name="expression"]', 'price * count');
        await page.evaluate(`document.querySelector('#add-field button').focus()`);
        await page.press('Enter');
        await page.waitFor(shows('#field-added', 'Added total to Order (now version 2)'), 'the formula added');
        // The record written before it gets its value in the background; on its page it cannot be edited.
        for (let tries = 0; ; tries++) {
          const record = await call('GET', `/records/${made.id}`, fay.key);
          if (record.fieldValues.some((f: { fieldName: string }) => f.fieldName === 'total')) break;
          if (tries > 100) throw new Error('the formula was not computed for the record');
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        await page.evaluate(`location.hash = '#/records/${made.id}'`);
        await page.waitFor(`document.querySelector('#field-total')?.value === '18'`, 'the computed total');
        expect(
          await page.evaluate(`(() => { const e = document.querySelector('#field-total');
            return [e.readOnly, e.disabled, document.querySelector('label[for="field-total"]').textContent,
              document.querySelector('form[data-field="total"] button').disabled]; })()`),
        ).toEqual([true, true, 'total (formula)', true]);
        // A lookup shows the referenced record's value, read-only too.
        expect(
          await page.evaluate(`(() => { const e = document.querySelector('#field-buyerName');
            const label = document.querySelector('label[for="field-buyerName"]').textContent;
            return [e.value, e.readOnly, e.disabled, label]; })()`),
        ).toEqual(['Grace', true, true, 'buyerName (lookup)']);
        // A rollup shows what the records referencing this one sum up to, read-only too.
        await page.evaluate(`location.hash = '#/records/${grace.id}'`);
        await page.waitFor(`document.querySelector('#field-spent')?.value === '4.5'`, 'the sum of orders');
        expect(
          await page.evaluate(`(() => { const e = document.querySelector('#field-spent');
            return [e.readOnly, e.disabled, document.querySelector('label[for="field-spent"]').textContent]; })()`),
        ).toEqual([true, true, 'spent (rollup)']);
      } finally {
        await page.close();
      }
    },
    300_000,
  );

  it.skipIf(!browserTestsRun)(
    "tells the operator's token and a new administrator what they can do; " +
      'one sets up users, keys, workspaces, objects, fields of every type',
    async () => {
      const fresh = await user('Fresh Admin', true);
      const page = await openTab(`${worker.url}/console`);
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', ADMIN);
        await page.press('Enter');
        await page.waitFor(shows('#admin-note', "This is the operator's ADMIN_TOKEN."), 'the note for the operator');
        expect(await page.evaluate('location.hash')).toBe('#/admin');
        await page.waitFor(shows('#main table', 'Fresh Admin'), 'the users, read with the token');
        expect(await page.evaluate(`document.querySelector('#who-name').textContent`)).toContain('ADMIN_TOKEN');
        await page.evaluate(`document.querySelector('#forget').click()`);
        await page.waitFor(`!document.querySelector('#key-form').hidden`, 'the key form again');
        await page.type('#api-key', fresh.key);
        await page.press('Enter');
        await page.waitFor(shows('#admin-note', 'belong to no workspace yet'), 'the note for a fresh administrator');
        expect(await page.evaluate('location.hash')).toBe('#/admin');

        // The administrator sets the tenant up in the browser: a workspace, themself in it, a user and their key,
        // an object with fields of each kind and their flags; then revokes the key.
        const submit = async (form: string, values: Record<string, string | boolean | string[]>, done: string) => {
          await page.waitFor(`document.querySelector('${form}')`, form);
          await page.evaluate(`(() => { const f = document.querySelector('${form}');
            for (const [name, value] of Object.entries(${JSON.stringify(values)})) {
              const e = f.elements[name];
              if (e.type === 'checkbox') e.checked = value;
              else if (e.multiple) for (const o of e.options) o.selected = value.includes(o.textContent);
              else if (e.tagName === 'SELECT') e.value = [...e.options].find((o) => o.textContent === value).value;
              else e.value = value;
            }
            f.requestSubmit(); })()`);
          await page.waitFor(shows('#main', done), done);
        };
        await submit('#new-workspace', { name: 'Lab' }, 'Created workspace Lab');
        await submit(
          '#add-member',
          { workspace: 'Lab', user: 'Fresh Admin', role: 'editor' },
          'is now a member of Lab',
        );
        await page.waitFor(linkNamed('Lab', 'nav'), 'the workspace on the left');
        await submit('#new-user', { name: 'Lee' }, 'Created user Lee');
        await page.evaluate(`document.querySelector('button[aria-label="New key for Lee"]').click()`);
        await page.waitFor(`document.querySelector('#new-key-text')`, 'the key, shown once');
        expect(await page.accessible('button', 'Copy key')).toHaveLength(1);
        const leeKey = await page.evaluate<string>(`document.querySelector('#new-key-text').textContent`);
        expect((await call('GET', '/me', leeKey)).name).toBe('Lee');
        await submit('#new-object', { name: 'Sample', workspaces: ['Lab'], first: 'title' }, 'Created object Sample');
        await submit(
          '#add-field',
          { object: 'Sample', name: 'size', type: 'integer', required: true, indexed: true },
          'Added size to Sample',
        );
        await page.waitFor(`document.querySelector('#add-field')`, 'the field form again');
        await page.evaluate(`(() => { const f = document.querySelector('#add-field');
          f.elements.object.value = [...f.elements.object.options].find((o) => o.textContent === 'Sample').value;
          f.elements.name.value = 'parent'; f.elements.type.value = 'reference';
          f.elements.target.value = f.elements.object.value; f.requestSubmit(); })()`);
        await page.waitFor(shows('#field-added', 'Added parent to Sample'), 'the reference field');
        expect(await page.evaluate(`document.querySelector('#admin-objects').textContent`)).toContain(
          'Sample (version 3): title text (required), size integer (required, indexed), parent reference → Sample',
        );
        // A field of every other type, with its flags and settings.
        const kinds: [string, Record<string, string | boolean>][] = [
          ['number', { indexed: true }],
          ['boolean', {}],
          ['date', {}],
          ['datetime', { indexed: true }],
          ['select', { options: 'small; large' }],
          ['multiSelect', { options: 'red; blue' }],
          ['email', { unique: true }],
          ['url', {}],
          ['json', {}],
          ['file', { multiple: true }],
          ['formula', { expression: 'size * 2', resultType: 'number' }],
          ['lookup', { reference: 'parent', lookupField: 'title' }],
          ['rollup', { from: 'Sample', fromField: 'parent', op: 'sum', of: 'size' }],
        ];
        for (const [type, settings] of kinds) {
          const flags = { required: false, indexed: false, unique: false, multiple: false };
          const values = { object: 'Sample', name: `a_${type}`, type, ...flags, ...settings };
          await submit('#add-field', values, `Added a_${type} to Sample`);
        }
        const sample = (await call('GET', '/admin/objects', ADMIN)).items.find(
          (o: { name: string }) => o.name === 'Sample',
        );
        expect(sample.fields.slice(3)).toEqual([
          expect.objectContaining({ name: 'a_number', type: 'number', indexed: true }),
          expect.objectContaining({ name: 'a_boolean', type: 'boolean' }),
          expect.objectContaining({ name: 'a_date', type: 'date' }),
          expect.objectContaining({ name: 'a_datetime', type: 'datetime', indexed: true }),
          expect.objectContaining({ name: 'a_select', type: 'select', options: ['small', 'large'] }),
          expect.objectContaining({ name: 'a_multiSelect', type: 'multiSelect', options: ['red', 'blue'] }),
          expect.objectContaining({ name: 'a_email', type: 'email', unique: true }),
          expect.objectContaining({ name: 'a_url', type: 'url' }),
          expect.objectContaining({ name: 'a_json', type: 'json' }),
          expect.objectContaining({ name: 'a_file', type: 'file', multiple: true }),
          expect.objectContaining({ name: 'a_formula', type: 'formula', expression: 'size * 2', resultType: 'number' }),
          expect.objectContaining({ name: 'a_lookup', type: 'lookup', reference: 'parent', field: 'title' }),
          expect.objectContaining({
            name: 'a_rollup',
            type: 'rollup',
            from: { objectId: sample.id, field: 'parent' },
            op: 'sum',
            of: 'size',
          }),
        ]);
        await page.evaluate(`document.querySelector('button[aria-label="Show keys of Lee"]').click()`);
        await page.waitFor(`document.querySelector('button[aria-label^="Revoke key"]')`, "Lee's key");
        await page.evaluate(`document.querySelector('button[aria-label^="Revoke key"]').click()`);
        await page.waitFor(shows('#status', 'it stops working now'), 'the key revoked');
        const revoked = await fetch(`${worker.url}/me`, { headers: { Authorization: `Bearer ${leeKey}` } });
        expect(revoked.status).toBe(401);
        // Anything else pasted is still not accepted.
        await page.evaluate(`document.querySelector('#forget').click()`);
        await page.waitFor(`!document.querySelector('#key-form').hidden`, 'the key form again');
        await page.type('#api-key', 'rk_not-a-key');
        await page.press('Enter');
        await page.waitFor(shows('body', 'That API key was not accepted.'), 'the refusal');
      } finally {
        await page.close();
      }
    },
  );

  it.skipIf(!browserTestsRun)(
    'deletes records picked in a list, keeps its view in the address through a reload, deletes and restores one',
    async () => {
      const dee = await user('Dee');
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Ops' });
      await call('PUT', `/admin/workspaces/${ws}/members/${dee.id}`, ADMIN, { role: 'editor' });
      const task = await call('POST', '/admin/objects', ADMIN, {
        name: 'Task',
        workspaceIds: [ws],
        nameTemplate: '{title}',
        fields: [{ name: 'title', type: 'text', required: true }],
      });
      const made = [];
      for (const title of ['Alpha', 'Beta', 'Gamma']) made.push(await create(dee.key, task.id, [fv('title', title)]));
      await noise(ws, dee.key);
      const page = await openTab(`${worker.url}/console`);
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', dee.key);
        await page.press('Enter');
        await page.waitFor(`${listed} === 'Alpha|Beta|Gamma'`, 'the tasks, by name');
        expect(await page.accessible('checkbox', 'Select Beta')).toHaveLength(1);
        await page.evaluate(`(() => { for (const name of ['Alpha', 'Gamma'])
          document.querySelector('#records input[aria-label="Select ' + name + '"]').click(); })()`);
        await page.evaluate(`document.querySelector('#delete-picked').click()`);
        await page.waitFor(shows('#picked-note', 'Deleted 2 of 2 records'), 'the records deleted');
        await page.waitFor(`${listed} === 'Beta'`, 'the list without them');

        // The view is in the address: a reload (or the link, shared) shows the same search, filter and sort.
        await page.evaluate(`(() => { const s = document.querySelector('#search');
          s.value = 'bet'; s.dispatchEvent(new Event('input')); })()`);
        await page.evaluate(`(() => { const s = document.querySelector('#sort');
          s.value = 'name:desc'; s.dispatchEvent(new Event('change')); })()`);
        await page.evaluate(`(() => { document.querySelector('#filter-field').value = 'title';
          document.querySelector('#filter-op').value = 'startsWith';
          document.querySelector('#filter-value').value = 'B';
          document.querySelector('#filter-value').form.requestSubmit(); })()`);
        await page.waitFor(`location.hash.includes('filters=')`, 'the view in the address');
        const address = await page.evaluate<string>('location.hash');
        const params = new URLSearchParams(address.split('?')[1]);
        expect([params.get('object'), params.get('search'), params.get('sort')]).toEqual([
          String(task.id),
          'bet',
          'name:desc',
        ]);
        expect(JSON.parse(params.get('filters') ?? '')).toEqual([{ field: 'title', op: 'startsWith', value: 'B' }]);
        await page.evaluate('location.reload()');
        await page.waitFor(`document.querySelector('#search')?.value === 'bet'`, 'the search after a reload');
        await page.waitFor(`${listed} === 'Beta'`, 'the same records after a reload');
        expect(
          await page.evaluate(
            `[document.querySelector('#sort').value, document.querySelector('#filters').textContent]`,
          ),
        ).toEqual(['name:desc', expect.stringContaining('title starts with B')]);
        const read = async (id: number) => call('GET', `/records/${id}`, dee.key);
        expect((await read(made[0].id)).deleted).toBe(true);
        expect((await read(made[2].id)).deleted).toBe(true);
        expect((await read(made[1].id)).deleted).toBe(false);

        await page.evaluate(`location.hash = '#/records/${made[0].id}'`);
        await page.waitFor(shows('#delete-record', 'Restore record'), 'the restore button of a deleted record');
        await page.evaluate(`document.querySelector('#delete-record').click()`);
        await page.waitFor(shows('#record-action', 'Restored.'), 'the record restored');
        expect(await read(made[0].id)).toMatchObject({ deleted: false, version: 3 });
        expect(await page.evaluate(`document.querySelector('#delete-record').textContent`)).toBe('Delete record');
        await page.evaluate(`document.querySelector('#delete-record').click()`);
        await page.waitFor(shows('#record-action', 'Deleted'), 'the record deleted again');
        expect(await read(made[0].id)).toMatchObject({ deleted: true, version: 4 });
      } finally {
        await page.close();
      }
    },
    300_000,
  );

  it.skipIf(!browserTestsRun)(
    'shows records as a grid: chosen columns, header sorts, page sizes, keyboard moves, cells edited with If-Match',
    async () => {
      const gil = await user('Gil');
      const bob = await user('Bob G');
      const { id: ws } = await call('POST', '/admin/workspaces', ADMIN, { name: 'Stock' });
      for (const member of [gil, bob])
        await call('PUT', `/admin/workspaces/${ws}/members/${member.id}`, ADMIN, { role: 'editor' });
      const supplier = await call('POST', '/admin/objects', ADMIN, {
        name: 'Supplier',
        workspaceIds: [ws],
        nameTemplate: '{label}',
        fields: [{ name: 'label', type: 'text' }],
      });
      const item = await call('POST', '/admin/objects', ADMIN, {
        name: 'Item',
        workspaceIds: [ws],
        nameTemplate: '{title}',
        fields: [
          { name: 'title', type: 'text', required: true },
          { name: 'qty', type: 'integer', indexed: true },
          { name: 'color', type: 'select', options: ['red', 'blue'] },
          { name: 'note', type: 'text' },
          { name: 'from', type: 'reference', target: supplier.id },
          { name: 'photo', type: 'file' },
        ],
      });
      const acme = await create(gil.key, supplier.id, [fv('label', 'Acme Parts')]);
      const bolt = await create(gil.key, supplier.id, [fv('label', 'Bolt Co')]);
      await noise(ws, bob.key);
      const items: { id: number }[] = [];
      // 130 items: more than a page of 50, and than one request's 100.
      for (let b = 0; b < 13; b++) {
        const made = await call(
          'POST',
          '/records/batch',
          gil.key,
          Array.from({ length: 10 }, (_, i) => ({
            objectId: item.id,
            fieldValues: [
              fv('title', `Item ${String(b * 10 + i).padStart(3, '0')}`),
              fv('qty', ((b * 10 + i) * 7) % 30),
              fv('color', 'red'),
              fv('from', acme.id),
            ],
          })),
        );
        items.push(...made.map((m: { record: { id: number } }) => m.record));
      }
      const page = await openTab(`${worker.url}/console`);
      const headers = `[...document.querySelectorAll('#grid-head th')].map((th) => th.textContent).join('|')`;
      const column = (name: string) =>
        `[...document.querySelectorAll('#records td[data-field="${name}"]')].map((td) => td.textContent).join('|')`;
      try {
        await page.waitFor(`document.querySelector('#api-key')`, 'the key field');
        await page.type('#api-key', gil.key);
        await page.press('Enter');
        await page.waitFor(`document.querySelector('#object option[value="${item.id}"]')`, 'the objects');
        await setSelectOn(page, '#object', String(item.id));
        await page.waitFor(shows('#count', '130 Item records found'), 'the grid');
        // The other object's records share the workspace: the grid shows the chosen object's alone.
        await page.waitFor(`document.querySelectorAll('#records tr').length === 50`, 'a page of 50');
        expect(await page.evaluate(headers)).toBe('Name ▲|title|qty|color|note|from|photo');
        // A reference shows the record it names, by name.
        expect(new Set((await page.evaluate<string>(column('from'))).split('|'))).toEqual(new Set(['Acme Parts']));
        expect(await page.evaluate(`document.querySelector('#grid-head th').getAttribute('aria-sort')`)).toBe(
          'ascending',
        );

        // Columns chosen are remembered in this browser.
        await page.evaluate(`(() => { const box = [...document.querySelectorAll('#columns input')]
          .find((i) => i.parentElement.textContent.trim() === 'note'); box.click(); })()`);
        await page.waitFor(`${headers} === 'Name ▲|title|qty|color|from|photo'`, 'the note column hidden');

        // A header sorts by its field where the API can (an indexed field): ascending, then descending.
        await page.evaluate(
          `[...document.querySelectorAll('#grid-head button')].find((b) => b.textContent === 'qty').click()`,
        );
        await page.waitFor(`${headers} === 'Name|title|qty ▲|color|from|photo'`, 'sorted by qty');
        const ascending = await page.evaluate<string>(column('qty'));
        expect(ascending.split('|').map(Number)).toEqual([...ascending.split('|').map(Number)].sort((a, b) => a - b));
        await page.evaluate(
          `[...document.querySelectorAll('#grid-head button')].find((b) => b.textContent.startsWith('qty')).click()`,
        );
        await page.waitFor(`${headers} === 'Name|title|qty ▼|color|from|photo'`, 'sorted by qty, descending');

        // Page sizes: a page of 500 is read in requests of 100, here all 130 items.
        await setSelectOn(page, '#page-size', '500');
        await page.waitFor(`document.querySelectorAll('#records tr').length === 130`, 'a page of 500 holding all 130');
        const qty = await page.evaluate<string>(column('qty'));
        expect(qty.split('|').map(Number)).toEqual([...qty.split('|').map(Number)].sort((a, b) => b - a));
        await setSelectOn(page, '#page-size', '50');
        await page.waitFor(`document.querySelectorAll('#records tr').length === 50`, 'a page of 50 again');

        // Keyboard: arrows move between cells; Enter edits one; Enter saves it with If-Match.
        await setSelectOn(page, '#sort', 'name:asc');
        await page.waitFor(`${headers} === 'Name ▲|title|qty|color|from|photo'`, 'by name again');
        await page.evaluate(`document.querySelector('#records tr td[data-field="title"]').focus()`);
        await page.press('ArrowRight');
        await page.press('ArrowRight');
        expect(await page.evaluate(`document.activeElement.dataset.field`)).toBe('color');
        await page.press('Enter');
        await page.waitFor(`document.activeElement.tagName === 'SELECT'`, 'the color picker');
        await page.evaluate(`document.activeElement.value = 'blue'`);
        await page.press('Enter');
        await page.waitFor(shows('#grid-note', 'Saved color of Item 000'), 'the saved cell');
        const first = items.find((r) => r.id === Math.min(...items.map((x) => x.id))) as { id: number };
        expect((await call('GET', `/records/${first.id}`, gil.key)).fieldValues).toContainEqual(fv('color', 'blue'));

        // Someone else changes the cell while it is edited: refused, theirs said, the typed value kept; Enter saves it.
        await page.evaluate(`document.querySelector('#records tr td[data-field="qty"]').focus()`);
        await page.press('Enter');
        await page.waitFor(`document.activeElement.tagName === 'INPUT'`, 'the qty box');
        await page.evaluate(`document.activeElement.value = '5'`);
        await call('PATCH', `/workspaces/${ws}/records/${first.id}`, bob.key, { fieldValues: [fv('qty', 99)] });
        await page.waitFor(shows('#live', 'qty'), 'their change, arrived while editing');
        expect(await page.evaluate(`document.activeElement.value`)).toBe('5');
        await page.press('Enter');
        await page.waitFor(shows('#grid-note', 'qty is now “99”'), 'the conflict in the grid');
        expect(await page.evaluate(`document.activeElement.value`)).toBe('5');
        await page.press('Enter');
        await page.waitFor(shows('#grid-note', 'Saved qty of Item 000'), 'saved over theirs');
        expect((await call('GET', `/records/${first.id}`, gil.key)).fieldValues).toContainEqual(fv('qty', 5));

        // A reference cell picks a record by name: the names typed offer the target's records; Enter saves the pick.
        await page.evaluate(`document.querySelector('#records tr td[data-field="from"]').focus()`);
        await page.press('Enter');
        await page.waitFor(`document.activeElement.getAttribute('list')`, 'the reference box with its choices');
        await page.type(`#${`cell-${first.id}-from`}`, 'Bol');
        await page.waitFor(
          `[...document.querySelectorAll('#cell-${first.id}-from-choices option')].map((o) => o.label).join()
            === 'Bolt Co'`,
          'Bolt Co offered',
        );
        await page.evaluate(`(() => { const box = document.activeElement; box.value = box.list.options[0].value; })()`);
        await page.press('Enter');
        await page.waitFor(shows('#grid-note', 'Saved from of Item 000'), 'the reference saved');
        expect(await page.evaluate(`document.activeElement.textContent`)).toBe('Bolt Co');
        expect((await call('GET', `/records/${first.id}`, gil.key)).fieldValues).toContainEqual(fv('from', bolt.id));

        // A file cell takes an upload: picked, sent with a bar, saved into the field with If-Match.
        writeFileSync(join(files, 'label.png'), Buffer.from('not really a png'));
        // Focused and opened in one step: a change arriving (the save before) may draw the grid again between two.
        const openPhoto = `(() => { const td = document.querySelector('#records tr td[data-field="photo"]'); td.focus();
          td.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true })); })()`;
        await page.evaluate(openPhoto);
        await page.waitFor(`document.activeElement.type === 'file'`, 'the file picker of the cell');
        const { result } = await page.send('Runtime.evaluate', { expression: 'document.activeElement' });
        await page.send('DOM.setFileInputFiles', { files: [join(files, 'label.png')], objectId: result.objectId });
        await page.waitFor(shows('#grid-note', 'Saved photo of Item 000: label.png'), 'the file saved');
        expect(await page.evaluate(`document.activeElement.textContent`)).toBe('label.png');
        const photo = (await call('GET', `/records/${first.id}`, gil.key)).fieldValues.find(
          (f: { fieldName: string }) => f.fieldName === 'photo',
        );
        expect(photo.value).toEqual([expect.objectContaining({ name: 'label.png', size: 16 })]);

        // Someone else changes the record while files are picked: refused, the upload kept; Enter saves it on theirs.
        writeFileSync(join(files, 'label2.png'), Buffer.from('a second label'));
        await page.evaluate(openPhoto);
        await page.waitFor(`document.activeElement.type === 'file'`, 'the file picker again');
        await call('PATCH', `/workspaces/${ws}/records/${first.id}`, bob.key, { fieldValues: [fv('qty', 77)] });
        const again = await page.send('Runtime.evaluate', { expression: 'document.activeElement' });
        await page.send('DOM.setFileInputFiles', {
          files: [join(files, 'label2.png')],
          objectId: again.result.objectId,
        });
        await page.waitFor(shows('#grid-note', 'Your label2.png wait here'), 'the conflict, the file kept');
        await page.press('Enter');
        await page.waitFor(shows('#grid-note', 'Saved photo of Item 000: label2.png'), 'the file saved on theirs');
        const after = (await call('GET', `/records/${first.id}`, gil.key)).fieldValues;
        expect(after).toContainEqual(fv('qty', 77));
        expect(after.find((f: { fieldName: string }) => f.fieldName === 'photo').value).toEqual([
          expect.objectContaining({ name: 'label2.png', size: 14 }),
        ]);
        // The README's picture: the grid.
        await page.evaluate(`document.querySelector('#status').textContent = ''`);
        await page.evaluate(`document.querySelector('#records-heading').scrollIntoView()`);
        mkdirSync(here('generated'), { recursive: true });
        const shot = await page.send('Page.captureScreenshot', { format: 'png' });
        writeFileSync(here('generated/console.png'), Buffer.from(shot.data, 'base64'));
        if (process.env.UPDATE_SCREENSHOT === '1') copyFileSync(here('generated/console.png'), here('console.png'));
      } finally {
        await page.close();
      }
    },
    300_000,
  );

  it('is served without a key, from the Worker alone (nothing from elsewhere), never inside a frame', async () => {
    const res = await fetch(`${worker.url}/console`);
    expect(res.status).toBe(200);
    expect(res.headers.get('Content-Type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('X-Frame-Options')).toBe('DENY');
    const html = await res.text();
    expect([...html.matchAll(/(?:src|href)="([^"#][^"]*)"/g)].map((m) => m[1])).toEqual([]);
    // Its policy comes with it: its own script and style alone (by hash), calls to this service alone.
    const policy = res.headers.get('Content-Security-Policy') ?? '';
    expect(policy).toMatch(/script-src 'sha256-[A-Za-z0-9+/]{43}=';/);
    expect(policy).toContain("connect-src 'self'");
    expect(policy).not.toContain('unsafe-inline');
    expect(res.headers.get('X-Content-Type-Options')).toBe('nosniff');
    const again = await fetch(`${worker.url}/console`, { headers: { 'If-None-Match': res.headers.get('ETag') ?? '' } });
    expect(again.status).toBe(304);
    const slash = await fetch(`${worker.url}/console/`, { redirect: 'manual' });
    expect([slash.status, slash.headers.get('Location')]).toEqual([308, '/console']);
  });
});
