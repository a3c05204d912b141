-- Live changes (events/live.py) read the events committed after a mark, in
-- commit order. Ids are not in that order here (several writers at once), so
-- each event records the transaction that wrote it (tx, pg_current_xact_id())
-- and its place in it (seq). Every transaction below a snapshot's xmin has
-- ended, so a reader that only reads events whose tx is below xmin, ordered
-- by (tx, seq), never sees one committed later fall behind its mark
-- (models/events.py). Only PostgreSQL has these columns
-- (tests/test_migrations_engines.py lists them).

ALTER TABLE "event"
    ADD COLUMN "seq" BIGSERIAL,
    ADD COLUMN "tx" xid8 NOT NULL DEFAULT pg_current_xact_id();
CREATE INDEX "event_tx_seq" ON "event" ("tx", "seq");
