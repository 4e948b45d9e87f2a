-- Lists and the change feed.

-- A workspace's records in id order: the list walks this, and the feed checks membership by it.
CREATE INDEX record_workspaces_by_workspace ON record_workspaces (workspace_id, record_id);
-- Filters the planner may prefer when they are selective.
CREATE INDEX records_by_object ON records (object_id, id);
CREATE INDEX records_by_update ON records (updated_at);

-- The highest change `seq` pruned so far: a feed cursor below it has lost changes (410).
CREATE TABLE feed_horizon (
  id  INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL CHECK (seq >= 0)
) STRICT;
