import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { databaseNames } from '../../src/tenancy/routes.ts';

// Storage is isolated per test file; the same migration files as production build the schema of
// every database.
const databases = env as unknown as Record<string, D1Database>;
for (const name of databaseNames(env)) await applyD1Migrations(databases[name] as D1Database, env.TEST_MIGRATIONS);
