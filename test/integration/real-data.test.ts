import { describe, expect, it } from 'vitest';
import airportsCsv from './data/airports.csv?raw';
import flightsJson from './data/flights-2k.json?raw';
import {
  admin,
  call,
  download,
  finished,
  newUser,
  newWorkspace,
  queryRecords,
  untilIndexBuilt,
  upload,
} from './helpers.ts';

/**
 * Data no test tuned: airports.csv and flights-2k.json as vega-datasets 3.2.1 (npm) publishes them
 * (3,376 airports; 2,000 flights between them). Imported as they come, then summarized: each
 * airport's rollups of its flights and the aggregates of the flights by airport equal a count made
 * by hand from the files.
 */

interface Flight {
  date: string;
  delay: number;
  distance: number;
  origin: string;
  destination: string;
}

const flights = JSON.parse(flightsJson) as Flight[];

interface Tally {
  departures: number;
  arrivals: number;
  delay: number;
  longest: number | undefined;
  distance: number;
}

/** Per airport code, what its flights add up to, by hand. */
function byHand(): Map<string, Tally> {
  const tallies = new Map<string, Tally>();
  const tally = (code: string): Tally => {
    let t = tallies.get(code);
    if (t === undefined)
      tallies.set(code, (t = { departures: 0, arrivals: 0, delay: 0, longest: undefined, distance: 0 }));
    return t;
  };
  for (const f of flights) {
    const from = tally(f.origin);
    from.departures += 1;
    from.delay += f.delay;
    from.distance += f.distance;
    from.longest = Math.max(from.longest ?? -Infinity, f.distance);
    tally(f.destination).arrivals += 1;
  }
  return tallies;
}

describe('airports and their flights, as published', () => {
  it('rollups and aggregates equal a count by hand', { timeout: 240_000 }, async () => {
    const editor = await newUser('editor');
    const workspaceId = await newWorkspace({ [editor.id]: 'editor' });
    const key = editor.key;
    const airportFields = [
      { name: 'iata', type: 'text', unique: true },
      { name: 'airport', type: 'text' },
      { name: 'city', type: 'text' },
      { name: 'state', type: 'text' },
      { name: 'country', type: 'text' },
    ];
    const airport = (
      await admin('POST', '/admin/objects', {
        name: 'Airport',
        workspaceIds: [workspaceId],
        nameTemplate: '{airport}',
        fields: airportFields,
      })
    ).body;
    const flight = (
      await admin('POST', '/admin/objects', {
        name: 'Flight',
        workspaceIds: [workspaceId],
        fields: [
          { name: 'date', type: 'text' },
          { name: 'delay', type: 'integer', indexed: true },
          { name: 'distance', type: 'integer' },
          { name: 'origin', type: 'reference', target: airport.id },
          { name: 'destination', type: 'reference', target: airport.id },
        ],
      })
    ).body;

    // The airports as the file comes: its `name` column to `airport` (no field takes that name),
    // its coordinates left out.
    const columns = encodeURIComponent(JSON.stringify({ name: 'airport', latitude: null, longitude: null }));
    const started = await upload(
      key,
      workspaceId,
      `objectId=${airport.id}&columns=${columns}`,
      airportsCsv,
      'text/csv',
    );
    expect(started.status).toBe(202);
    const imported = await finished(key, started.body.id, 120_000);
    expect(imported.rows).toMatchObject({ created: 3376, failed: 0 });

    // Each code's record, read back from an export.
    const exported = await download(key, `/workspaces/${workspaceId}/records/export?objectId=${airport.id}`);
    const idOf = new Map<string, number>();
    for (const line of (await exported.text()).split('\n').filter(Boolean)) {
      const record = JSON.parse(line) as { id: number; fieldValues: { fieldName: string; value: unknown }[] };
      const iata = record.fieldValues.find((v) => v.fieldName === 'iata')?.value as string;
      idOf.set(iata, record.id);
    }
    expect(idOf.size).toBe(3376);

    // The flights, their codes as references.
    const lines = flights.map((f) =>
      JSON.stringify({
        date: f.date,
        delay: f.delay,
        distance: f.distance,
        origin: idOf.get(f.origin),
        destination: idOf.get(f.destination),
      }),
    );
    const flown = await upload(key, workspaceId, `objectId=${flight.id}`, `${lines.join('\n')}\n`);
    expect(flown.status).toBe(202);
    expect((await finished(key, flown.body.id, 120_000)).rows).toMatchObject({ created: 2000, failed: 0 });

    // Rollups defined once the flights are in: computed for every airport in the background.
    const from = (field: string) => ({ objectId: flight.id, field });
    const defined = await admin('PUT', `/admin/objects/${airport.id}`, {
      name: 'Airport',
      workspaceIds: [workspaceId],
      nameTemplate: '{airport}',
      fields: [
        ...airportFields,
        { name: 'departures', type: 'rollup', from: from('origin'), op: 'count' },
        { name: 'arrivals', type: 'rollup', from: from('destination'), op: 'count' },
        { name: 'totalDelay', type: 'rollup', from: from('origin'), op: 'sum', of: 'delay' },
        { name: 'longest', type: 'rollup', from: from('origin'), op: 'max', of: 'distance' },
      ],
    });
    expect(defined.status).toBe(200);
    await untilIndexBuilt(airport.id, 120_000);

    const hand = byHand();
    // Every airport with a flight out, found by a filter on its rollup, sorted by it.
    const busy = [...hand.entries()].filter(([, t]) => t.departures > 0);
    const seen: { id: number; values: Record<string, unknown> }[] = [];
    let cursor: string | undefined;
    do {
      const page = await queryRecords(key, workspaceId, {
        filter: { field: 'departures', op: 'gt', value: 0 },
        sort: [{ field: 'departures', direction: 'desc' }],
        limit: 100,
        count: true,
        ...(cursor === undefined ? {} : { cursor }),
      });
      expect(page.status).toBe(200);
      for (const item of page.body.items)
        seen.push({
          id: item.id,
          values: Object.fromEntries(item.fieldValues.map((v: any) => [v.fieldName, v.value])),
        });
      cursor = page.body.nextCursor ?? undefined;
    } while (cursor !== undefined);
    expect(seen).toHaveLength(busy.length);
    const departures = seen.map((s) => s.values.departures as number);
    expect(departures).toEqual([...departures].sort((a, b) => b - a));
    for (const { values } of seen) {
      const t = hand.get(values.iata as string)!;
      expect([values.iata, values.departures, values.arrivals, values.totalDelay, values.longest]).toEqual([
        values.iata,
        t.departures,
        t.arrivals,
        t.delay,
        t.longest,
      ]);
    }

    // The flights by airport: a count, the sum of delays, the mean distance, as the hand count has them.
    const groups: { key: Record<string, unknown>; values: number[] }[] = [];
    let next: string | undefined;
    do {
      const answer = await call('POST', `/workspaces/${workspaceId}/records/aggregate`, {
        key,
        body: {
          objectId: flight.id,
          groupBy: [{ field: 'origin' }],
          measures: [{ op: 'count' }, { op: 'sum', field: 'delay' }, { op: 'avg', field: 'distance' }],
          limit: 100,
          ...(next === undefined ? {} : { cursor: next }),
        },
      });
      expect(answer.status).toBe(200);
      expect(answer.body.exact).toBe(true);
      groups.push(...answer.body.groups);
      next = answer.body.nextCursor ?? undefined;
    } while (next !== undefined);
    const codeOf = new Map([...idOf].map(([code, id]) => [id, code]));
    expect(groups).toHaveLength(busy.length);
    for (const group of groups) {
      const t = hand.get(codeOf.get(group.key.origin as number)!)!;
      expect(group.values[0]).toBe(t.departures);
      expect(group.values[1]).toBe(t.delay);
      expect(group.values[2]).toBeCloseTo(t.distance / t.departures, 9);
    }
    // By delay alone (an indexed field, kept totals): every flight counted once, delays summed exactly.
    const total = await call('POST', `/workspaces/${workspaceId}/records/aggregate`, {
      key,
      body: { objectId: flight.id, measures: [{ op: 'count' }, { op: 'sum', field: 'delay' }] },
    });
    expect(total.body.groups[0].values).toEqual([2000, flights.reduce((sum, f) => sum + f.delay, 0)]);
  });
});
