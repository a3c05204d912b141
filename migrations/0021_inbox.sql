-- The team's inbox (issue 39): who wrote a person's message, what each user
-- has read, a full-text index of message text, and the indexes that make a
-- page of the inbox cost the same whatever the number of conversations.

-- The workspace user who wrote a human message (NULL: written through the
-- API, or not a person's). A plain string: users live in their own table,
-- and a message outlives its author's account.
ALTER TABLE "message" ADD COLUMN "author_user_id" VARCHAR(200);

-- The key of the message's row in message_fts (see trainings: the implicit
-- rowid of a table with a text primary key may be renumbered by VACUUM).
ALTER TABLE "message" ADD COLUMN "search_rowid" INTEGER;
UPDATE "message" SET "search_rowid" = rowid;
CREATE UNIQUE INDEX "message_search_rowid" ON "message" ("search_rowid");

-- The time of the conversation's latest message from the contact, kept by a
-- trigger below: "unread" in the inbox's counts compares it with each
-- user's read mark instead of reading messages.
ALTER TABLE "conversation" ADD COLUMN "last_inbound_at" DATETIME;
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
    "user_id" VARCHAR(200) NOT NULL,
    "conversation_id" VARCHAR(36) NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "last_read_at" DATETIME NOT NULL,
    "last_read_message_id" VARCHAR(36),
    PRIMARY KEY ("user_id", "conversation_id"),
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX "conversation_reads_conversation_id" ON "conversation_reads" ("conversation_id");

-- The search index of message text and captions. Contentless: the text
-- lives in "message"; a row is deleted given the values it indexed, so the
-- triggers compute them with the same expressions, and only messages with
-- text or a caption have a row.
CREATE VIRTUAL TABLE "message_fts" USING fts5(
    text, caption,
    content = '',
    tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO "message_fts" (rowid, text, caption)
    SELECT "search_rowid", coalesce("text", ''), coalesce("caption", '') FROM "message"
    WHERE "text" IS NOT NULL OR "caption" IS NOT NULL;

-- A message stored without a search_rowid gets the next one (a bulk load
-- may give its own), then its row in the index: one trigger, so the order
-- is certain. The model never writes the column back (models/messages.py).
CREATE TRIGGER "message_fts_after_insert" AFTER INSERT ON "message" BEGIN
    UPDATE "message" SET "search_rowid" = (SELECT coalesce(max("search_rowid"), 0) + 1 FROM "message")
    WHERE rowid = NEW.rowid AND "search_rowid" IS NULL;
    INSERT INTO "message_fts" (rowid, text, caption)
        SELECT "search_rowid", coalesce(NEW."text", ''), coalesce(NEW."caption", '')
        FROM "message" WHERE rowid = NEW.rowid AND (NEW."text" IS NOT NULL OR NEW."caption" IS NOT NULL);
END;
CREATE TRIGGER "message_fts_after_delete" AFTER DELETE ON "message"
WHEN OLD."text" IS NOT NULL OR OLD."caption" IS NOT NULL BEGIN
    INSERT INTO "message_fts" ("message_fts", rowid, text, caption) VALUES (
        'delete', OLD."search_rowid", coalesce(OLD."text", ''), coalesce(OLD."caption", '')
    );
END;
CREATE TRIGGER "message_fts_unindex" AFTER UPDATE OF "text", "caption" ON "message"
WHEN (OLD."text" IS NOT NEW."text" OR OLD."caption" IS NOT NEW."caption")
 AND (OLD."text" IS NOT NULL OR OLD."caption" IS NOT NULL) BEGIN
    INSERT INTO "message_fts" ("message_fts", rowid, text, caption) VALUES (
        'delete', OLD."search_rowid", coalesce(OLD."text", ''), coalesce(OLD."caption", '')
    );
END;
CREATE TRIGGER "message_fts_reindex" AFTER UPDATE OF "text", "caption" ON "message"
WHEN (OLD."text" IS NOT NEW."text" OR OLD."caption" IS NOT NEW."caption")
 AND (NEW."text" IS NOT NULL OR NEW."caption" IS NOT NULL) BEGIN
    INSERT INTO "message_fts" (rowid, text, caption)
        VALUES (NEW."search_rowid", coalesce(NEW."text", ''), coalesce(NEW."caption", ''));
END;

-- The contact's latest message time, as message_last_direction keeps its
-- direction (a late delivery with an earlier time changes nothing).
CREATE TRIGGER "message_last_inbound_at" AFTER INSERT ON "message"
WHEN NEW."direction" = 'inbound' BEGIN
    UPDATE "conversation" SET "last_inbound_at" = NEW."created_at"
    WHERE "id" = NEW."conversation_id"
      AND ("last_inbound_at" IS NULL OR "last_inbound_at" < NEW."created_at");
END;
