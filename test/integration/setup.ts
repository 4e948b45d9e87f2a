import { applyD1Migrations } from 'cloudflare:test';
import { env } from 'cloudflare:workers';

// Storage is isolated per test file; the same migration files as production build the schema.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
