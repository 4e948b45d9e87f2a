/**
 * Shows that the access matrix guards every rule it claims to: each mutation below takes one rule
 * out of one path (a line of the source replaced), runs the matrix and the roles tests, and expects
 * them to fail. The source is restored after each, whatever happens. `npm run test:access-mutations`;
 * it prints one line per mutation and exits non-zero if any mutation went unnoticed.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';

interface Mutation {
  rule: string;
  file: string;
  from: string;
  to: string;
}

const MUTATIONS: Mutation[] = [
  {
    rule: "a file's download decided without its record's readers",
    file: 'src/domain/access.ts',
    from: '  if (!access.read) return false;\n  return file.record.fields',
    to: '  return file.record.fields',
  },
  {
    rule: "a file's download ignores hidden fields",
    file: 'src/domain/access.ts',
    from: '  return file.record.fields.some((field) => !access.fields.hidden.has(field));',
    to: '  return file.record.fields.length >= 0;',
  },
  {
    rule: "a record's read decided by membership alone (its role's objects and rows ignored)",
    file: 'src/storage/store.ts',
    from: "      AND ${ROLE_READS('ro.objects', 'm.user_id')})`;",
    to: '      )`;',
  },
  {
    rule: "a reference may name a record the writer's role hides",
    file: 'migrations/0024_references_by_role.sql',
    from: '      AND (m.role_id IS NULL OR EXISTS (SELECT 1 FROM roles ro, json_each(ro.objects) j',
    to: '      AND (1 OR EXISTS (SELECT 1 FROM roles ro, json_each(ro.objects) j',
  },
  {
    rule: 'own rows ignored when deciding on a record',
    file: 'src/domain/access.ts',
    from: "    return rule.rows === 'own' && record.ownedBy !== caller.userId ? [] : [rule];",
    to: '    return [rule];',
  },
  {
    rule: 'hidden fields writable in a patch',
    file: 'src/domain/patch.ts',
    from: "applyFieldValues(visibleDef(def, access.fields), [], values, prefix, 'patch')",
    to: "applyFieldValues(def, [], values, prefix, 'patch')",
  },
  {
    rule: 'read-only fields writable',
    file: 'src/domain/patch.ts',
    from: '  if (readOnly.size === 0) return [];',
    to: '  if (readOnly.size >= 0) return [];',
  },
  {
    rule: 'hidden fields writable in a create',
    file: 'src/domain/create.ts',
    from: 'applyFieldValues(visibleDef(def, limits), [], item.fieldValues',
    to: 'applyFieldValues(def, [], item.fieldValues',
  },
  {
    rule: "a workspace's list shows every record shared with it",
    file: 'src/storage/lists.ts',
    from: "    AND ${MEMBER_READS('?8', '?1')}\n",
    to: '\n',
  },
  {
    rule: "a list's field filter matches on hidden fields",
    file: 'src/storage/lists.ts',
    from: "WHERE ${MEMBER_HIDES('?8', '?1', \"(f.value ->> '$.name')\")}\n      OR NOT EXISTS",
    to: 'WHERE NOT EXISTS',
  },
  {
    rule: 'the feed shows changes of every record of the workspace',
    file: 'src/storage/lists.ts',
    from: "        AND (${MEMBER_RULES('?4', '?1')} IS NULL\n",
    to: '        AND (1\n',
  },
  {
    rule: "a query's walk shows every record of the workspace",
    file: 'src/storage/query.ts',
    from: '    if (this.seen !== undefined) conditions.push(seenBy(sql, this.seen));',
    to: '',
  },
  {
    rule: 'a query may name hidden fields',
    file: 'src/routes/query.ts',
    from: 'const parsed = parseQuery(body.value, catalogOf(view, building));',
    to: 'const parsed = parseQuery(body.value, catalogOf(objects, building));',
  },
  {
    rule: "a write's answer shows hidden fields",
    file: 'src/routes/record-writes.ts',
    from: '  if (caller === undefined || !isLimited(caller)) return body;',
    to: '  if (caller !== null) return body;',
  },
  {
    rule: 'a record read shows hidden fields',
    file: 'src/routes/records-read.ts',
    from: '  const shown = withoutHidden(record, access.fields.hidden);',
    to: '  const shown = record;',
  },
  {
    rule: "a list's items show hidden fields",
    file: 'src/routes/lists.ts',
    from: 'shown.map((record) => withoutHidden(record, limitsOf(record.objectId).hidden))',
    to: 'shown',
  },
  {
    rule: 'an export of an unlisted object',
    file: 'src/routes/export.ts',
    from: "  if (!seesObject(known.caller, workspaceId, stored.id)) throw notFound('Object');",
    to: '',
  },
  {
    rule: "an export's rows show hidden fields",
    file: 'src/routes/export.ts',
    from: '  const visible = (record: RecordOut): RecordOut => withoutHidden(record, hidden);',
    to: '  const visible = (record: RecordOut): RecordOut => record;',
  },
  {
    rule: 'history shows changes of hidden fields',
    file: 'src/routes/history.ts',
    from: 'historyItems(rows.slice(0, limit), rows[limit], hidden)',
    to: 'historyItems(rows.slice(0, limit), rows[limit])',
  },
  {
    rule: 'referenced-by lists every referencing record',
    file: 'src/routes/referenced-by.ts',
    from: '  const items = limited ? read.filter((row) => showsReference(caller, row)) : read;',
    to: '  const items = read;',
  },
  {
    rule: 'an upsert may match on a hidden field',
    file: 'src/write/upsert.ts',
    from: 'matchProblems(visibleDef(def, fieldLimits(caller, def.id, def.workspaceIds)), write.body)',
    to: 'matchProblems(def, write.body)',
  },
  {
    rule: 'the feed shows hidden fields',
    file: 'src/domain/feed-item.ts',
    from: '    values.filter((value) => !hidden.has(value.fieldName));',
    to: '    [...values];',
  },
  {
    rule: "a workspace's objects show unlisted objects and hidden fields",
    file: 'src/domain/access.ts',
    from: "  if (typeof grant === 'string') return [...defs];",
    to: '  if (grant !== null) return [...defs];',
  },
];

const TESTS = ['test/integration/access-matrix.test.ts', 'test/integration/roles.test.ts'];
let unnoticed = 0;
for (const mutation of MUTATIONS) {
  const original = readFileSync(mutation.file, 'utf8');
  if (!original.includes(mutation.from)) {
    console.log(`STALE     ${mutation.rule}: ${mutation.file} no longer holds the line it replaces`);
    unnoticed++;
    continue;
  }
  writeFileSync(mutation.file, original.replace(mutation.from, mutation.to));
  try {
    const run = spawnSync(
      'npx',
      ['vitest', 'run', '--config', 'test/vitest.config.ts', '--project', 'workers', ...TESTS],
      { encoding: 'utf8', env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } },
    );
    // The summary line, its colours taken out: ESC [ … m.
    const plain = run.stdout.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g'), '');
    const failed = /Tests\s.*?(\d+) failed/.exec(plain)?.[1];
    if (run.status === 0) unnoticed++;
    console.log(`${run.status === 0 ? 'UNNOTICED' : 'caught   '} ${mutation.rule} (${failed ?? 0} tests failed)`);
  } finally {
    writeFileSync(mutation.file, original);
  }
}
console.log(`${MUTATIONS.length - unnoticed} of ${MUTATIONS.length} mutations caught`);
process.exit(unnoticed === 0 ? 0 : 1);
