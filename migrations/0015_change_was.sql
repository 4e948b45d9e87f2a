-- A change's previous values beside its diff: a patch of every large value of a record near
-- 1 MiB has a diff of new and previous values near 2 MiB, past what D1 takes in one value. Such a
-- diff keeps its previous values (`was`) here, and `data` the rest; any other keeps them in `data`.
ALTER TABLE changes ADD COLUMN was TEXT;
