-- The team's inbox (issue 39): who wrote a person's message, what each user
-- has read, a full-text index of message text, and the indexes that make a
-- page of the inbox cost the same whatever the number of conversations.

-- The workspace user who wrote a human message (NULL: written through the
-- API, or not a person's). A plain string: users live in their own table,
-- and a message outlives its author's account.
ALTER TABLE "message" ADD COLUMN "author_user_id" TEXT;

-- The key of the message's row in message_fts (see trainings: the implicit
-- rowid of a table with a text primary key may be renumbered by VACUUM).
-- On PostgreSQL a sequence numbers them (see message_search_rowid below).
CREATE SEQUENCE "message_search_rowid_seq";
ALTER TABLE "message" ADD COLUMN "search_rowid" BIGINT;
CREATE UNIQUE INDEX "message_search_rowid" ON "message" ("search_rowid");

-- The time of the conversation's latest message from the contact, kept by a
-- trigger below: "unread" in the inbox's counts compares it with each
-- user's read mark instead of reading messages.
ALTER TABLE "conversation" ADD COLUMN "last_inbound_at" TIMESTAMP;
UPDATE "conversation" SET "last_inbound_at" = (
    SELECT max("created_at") FROM "message"
    WHERE "message"."conversation_id" = "conversation"."id" AND "direction" = 'inbound'
);

-- A page of the list under each filter reads one index range in its order.
CREATE INDEX "conversation_workspace_id_channel_id_status_updated_at_id"
    ON "conversation" ("workspace_id", "channel_id", "status", "updated_at", "id");
CREATE INDEX "conversation_workspace_id_agent_id_status_updated_at_id"
    ON "conversation" ("workspace_id", "agent_id", "status", "updated_at", "id");
CREATE INDEX "conversation_workspace_id_assigned_to_status_updated_at_id"
    ON "conversation" ("workspace_id", "assigned_to", "status", "updated_at", "id");
-- With the id, the unread count of the waiting reads this index alone.
CREATE INDEX "conversation_workspace_id_status_last_inbound_at"
    ON "conversation" ("workspace_id", "status", "last_inbound_at", "id");
-- Searching contact names reads this index, not the contact rows.
CREATE INDEX "contact_workspace_id_name" ON "contact" ("workspace_id", "name");

-- Per user and conversation: the time of the newest message when the user
-- last read it. Unread: the contact's messages after that.
CREATE TABLE "conversation_reads" (
    "user_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "last_read_at" TIMESTAMP NOT NULL,
    "last_read_message_id" TEXT,
    PRIMARY KEY ("user_id", "conversation_id"),
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "conversation_reads_conversation_id" ON "conversation_reads" ("conversation_id");

-- The search index of message text and captions (SQLite: the FTS5 table
-- message_fts): one row per message with text or a caption, keyed by its
-- search_rowid, text weighted A and caption B, in message_words (see
-- migration 0003: no stemming, accents folded, as FTS5's unicode61
-- remove_diacritics).
CREATE TABLE "message_fts" (
    "search_rowid" BIGINT NOT NULL PRIMARY KEY,
    "document" TSVECTOR NOT NULL
);
CREATE INDEX "message_fts_document" ON "message_fts" USING GIN ("document");

-- A message stored without a search_rowid gets the next one (a bulk load
-- may give its own). The model never writes the column back (models/messages.py).
CREATE FUNCTION "message_search_rowid"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF NEW."search_rowid" IS NULL THEN
        NEW."search_rowid" := nextval('message_search_rowid_seq');
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER "message_search_rowid" BEFORE INSERT ON "message"
    FOR EACH ROW EXECUTE FUNCTION "message_search_rowid"();

-- Its row in the index, kept exact in the transaction of every write.
CREATE FUNCTION "message_fts_sync"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM "message_fts" WHERE "search_rowid" = OLD."search_rowid";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND (NEW."text" IS NOT NULL OR NEW."caption" IS NOT NULL) THEN
        INSERT INTO "message_fts" ("search_rowid", "document") VALUES (
            NEW."search_rowid",
            setweight(to_tsvector('message_words', "search_text"(NEW."text")), 'A')
            || setweight(to_tsvector('message_words', "search_text"(NEW."caption")), 'B')
        );
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "message_fts_after_insert" AFTER INSERT ON "message"
    FOR EACH ROW WHEN (NEW."text" IS NOT NULL OR NEW."caption" IS NOT NULL)
    EXECUTE FUNCTION "message_fts_sync"();
CREATE TRIGGER "message_fts_after_delete" AFTER DELETE ON "message"
    FOR EACH ROW WHEN (OLD."text" IS NOT NULL OR OLD."caption" IS NOT NULL)
    EXECUTE FUNCTION "message_fts_sync"();
CREATE TRIGGER "message_fts_after_update" AFTER UPDATE OF "text", "caption" ON "message"
    FOR EACH ROW WHEN (OLD."text" IS DISTINCT FROM NEW."text"
                       OR OLD."caption" IS DISTINCT FROM NEW."caption")
    EXECUTE FUNCTION "message_fts_sync"();

-- The messages stored before this migration: their keys, then their rows.
UPDATE "message" SET "search_rowid" = nextval('message_search_rowid_seq')
WHERE "search_rowid" IS NULL;
INSERT INTO "message_fts" ("search_rowid", "document")
    SELECT "search_rowid", setweight(to_tsvector('message_words', "search_text"("text")), 'A')
        || setweight(to_tsvector('message_words', "search_text"("caption")), 'B')
    FROM "message" WHERE "text" IS NOT NULL OR "caption" IS NOT NULL;

-- The contact's latest message time, as message_last_direction keeps its
-- direction (a late delivery with an earlier time changes nothing).
CREATE FUNCTION "message_last_inbound_at"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "conversation" SET "last_inbound_at" = NEW."created_at"
    WHERE "id" = NEW."conversation_id"
      AND ("last_inbound_at" IS NULL OR "last_inbound_at" < NEW."created_at");
    RETURN NULL;
END;
$$;
CREATE TRIGGER "message_last_inbound_at" AFTER INSERT ON "message"
    FOR EACH ROW WHEN (NEW."direction" = 'inbound')
    EXECUTE FUNCTION "message_last_inbound_at"();
