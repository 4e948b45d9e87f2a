-- Imports that update records by id, that know how many rows their file holds, and that a
-- person can list again.
--
-- `mode=update` patches the record each row names by id and creates none. It is kept as an
-- upsert matched on `id` that creates nothing (`updates_only`): the CHECK on `mode` cannot take
-- a third value without rebuilding the table, and columns added here compose with any other
-- change to it.
ALTER TABLE imports ADD COLUMN updates_only INTEGER NOT NULL DEFAULT 0 CHECK (updates_only IN (0, 1));

-- The file's data rows, counted while it was kept (NULL for imports kept before).
ALTER TABLE imports ADD COLUMN total INTEGER CHECK (total IS NULL OR total >= 0);

-- A user's imports into a workspace, newest first.
CREATE INDEX imports_by_importer ON imports (user_id, workspace_id, id);
