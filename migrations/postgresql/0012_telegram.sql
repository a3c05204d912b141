-- The Telegram channel: the update ids it stored, per channel (dedupe of
-- redelivered updates, and the getUpdates offset of long polling).

CREATE TABLE "telegram_update" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "channel_id" TEXT NOT NULL,
    "update_id" BIGINT NOT NULL,
    "received_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "telegram_update_channel_id_update_id"
    ON "telegram_update" ("channel_id", "update_id");
