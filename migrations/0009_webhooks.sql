-- Webhook subscriptions: each workspace's feed pushed to URLs. Where a subscription stands in
-- the feed (its cursor, retries, the last deliveries) lives in its delivery object's own storage.

CREATE TABLE webhooks (
  id           INTEGER PRIMARY KEY CHECK (id >= 1),
  workspace_id INTEGER NOT NULL CHECK (workspace_id >= 0),
  url          TEXT    NOT NULL CHECK (length(url) BETWEEN 1 AND 2048),
  -- JSON arrays, or 'null' for "every type" / "every object".
  types        TEXT    NOT NULL CHECK (json_valid(types)),
  object_ids   TEXT    NOT NULL CHECK (json_valid(object_ids)),
  -- Signs deliveries, so it is kept as issued (whsec_<base64>); shown to the caller only once.
  secret       TEXT    NOT NULL CHECK (secret LIKE 'whsec_%'),
  status       TEXT    NOT NULL CHECK (status IN ('active', 'disabled')),
  reason       TEXT,
  -- Delivery starts after this change: the feed's newest when the subscription was made.
  start_seq    INTEGER NOT NULL CHECK (start_seq >= 0),
  created_at   INTEGER NOT NULL CHECK (created_at >= 0),
  created_by   INTEGER NOT NULL CHECK (created_by >= 0)
) STRICT;

-- A commit wakes the active subscriptions of its record's workspaces.
CREATE INDEX webhooks_by_workspace ON webhooks (workspace_id, status);
