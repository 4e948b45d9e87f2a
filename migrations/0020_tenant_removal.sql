-- Records are never deleted, but for one case: a deleted tenant's records go with the rest of its
-- data, in the background, once the tenant left this database (see `departures`).
DROP TRIGGER records_are_never_deleted;
CREATE TRIGGER records_are_never_deleted BEFORE DELETE ON records
WHEN NOT EXISTS (SELECT 1 FROM departures WHERE tenant_id = OLD.id / 68719476736 + 1 AND state = 'deleted')
BEGIN
  SELECT RAISE(ABORT, 'records_are_never_deleted');
END;
