-- Index builds in bounded chunks.
--
-- A field newly marked `indexed` (or whose type changed) needs index rows for the records
-- written before its definition said so. The definition's own write only records that the build
-- is due here; a Durable Object then builds it a chunk of records at a time, moving
-- `after_record_id` on in the chunk's own transaction, so a restart resumes where it stopped.
-- While a field has a row here, queries do not trust its index and read its values from the
-- records instead. Writes of records keep the index of such a field from the start (the
-- triggers follow the current definition), so rebuilding a chunk twice changes nothing.
-- A field made unique is built in the definition's own transaction instead: that is what lets
-- D1 refuse the definition when live records share a value.
CREATE TABLE index_builds (
  object_id       INTEGER NOT NULL REFERENCES objects (id),
  field           TEXT    NOT NULL,
  after_record_id INTEGER NOT NULL DEFAULT -1,
  started_at      INTEGER NOT NULL CHECK (started_at >= 0),
  PRIMARY KEY (object_id, field)
) STRICT, WITHOUT ROWID;
