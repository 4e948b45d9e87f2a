-- D1 is the arbiter of record versions. Every write of a record computes its
-- new version from the version it read and states it: `SET version = CASE version WHEN
-- <expected> THEN <new> END`. A stale expectation yields NULL, and this trigger turns that
-- (or any update that does not raise the version) into an error that aborts the whole
-- D1 batch, because an UPDATE that matches nothing is not an error on its own.
CREATE TRIGGER records_version_must_increase BEFORE UPDATE ON records
WHEN NEW.version IS NULL OR NEW.version <= OLD.version
BEGIN
  SELECT RAISE(ABORT, 'version_conflict');
END;
