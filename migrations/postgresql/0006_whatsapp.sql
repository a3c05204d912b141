-- The WhatsApp channel (issue 6): a channel's log of network notices
-- (template and quality updates, network errors, skipped payloads,
-- credential checks), and the adapters' pending work after a POST was
-- answered (media downloads, read receipts).

CREATE TABLE "channel_event" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "channel_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "is_error" BOOLEAN NOT NULL,
    "payload" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE CASCADE
);
CREATE INDEX "channel_event_channel_id_created_at_id"
    ON "channel_event" ("channel_id", "created_at", "id");

CREATE TABLE "channel_task" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "channel_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "payload" TEXT NOT NULL,
    "attempts" BIGINT NOT NULL,
    "due_at" TIMESTAMP NOT NULL,
    "last_error" TEXT,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE CASCADE
);
CREATE INDEX "channel_task_due_at" ON "channel_task" ("due_at");
CREATE INDEX "channel_task_channel_id" ON "channel_task" ("channel_id");
