-- Every stored message raises an event. Its workspace had an index of its own
-- besides (workspace_id, created_at), which already serves lookups by
-- workspace (and the foreign key): one B-tree less to write per event.

DROP INDEX "event_workspace_id";
