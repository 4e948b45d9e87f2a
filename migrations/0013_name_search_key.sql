-- Name search in SQL.
--
-- `name_key` is the record's name as search compares it: its words (Unicode letters and digits),
-- lower case, accents removed, joined by single spaces. The Worker computes it (SQLite here has
-- no Unicode case or accent folding) and writes it with the name, in the same row, so it costs
-- a write no row of its own. A search word matches a record when it starts a word of the key.
ALTER TABLE records ADD COLUMN name_key TEXT;

-- Records written before this column existed get their key from the Cron Trigger, in chunks;
-- until then search reads their name in lower case. Only rows without a key are in this index,
-- so a new record costs it nothing.
CREATE INDEX records_without_name_key ON records (id) WHERE name_key IS NULL;
