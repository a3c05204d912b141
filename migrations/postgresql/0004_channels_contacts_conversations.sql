-- Channels, contacts (with their network identities), conversations,
-- messages, and idempotency keys of POST requests.

-- Channels: deleted channels are kept inactive, with the time of deletion.
ALTER TABLE "channel" ADD COLUMN "connected_at" TIMESTAMP;
ALTER TABLE "channel" ADD COLUMN "deleted_at" TIMESTAMP;

-- Contacts: phone (E.164) and e-mail (lower case) are unique per workspace.
CREATE UNIQUE INDEX "contact_workspace_id_phone" ON "contact" ("workspace_id", "phone");
CREATE UNIQUE INDEX "contact_workspace_id_email" ON "contact" ("workspace_id", "email");
CREATE INDEX "contact_workspace_id_created_at" ON "contact" ("workspace_id", "created_at");

CREATE TABLE "contact_identity" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspace_id" TEXT NOT NULL,
    "contact_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "external_id" TEXT NOT NULL,
    "channel_id" TEXT,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("contact_id") REFERENCES "contact" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE SET NULL
);
CREATE INDEX "contact_identity_contact_id" ON "contact_identity" ("contact_id");
CREATE INDEX "contact_identity_channel_id" ON "contact_identity" ("channel_id");
CREATE UNIQUE INDEX "contact_identity_workspace_id_type_external_id"
    ON "contact_identity" ("workspace_id", "type", "external_id");

-- Conversations: state, assignment, activity; indexes for the listings.
ALTER TABLE "conversation" ADD COLUMN "assigned_to" TEXT;
ALTER TABLE "conversation" ADD COLUMN "last_message_at" TIMESTAMP;
ALTER TABLE "conversation" ADD COLUMN "message_count" BIGINT NOT NULL DEFAULT 0;
ALTER TABLE "conversation" ADD COLUMN "handoff_started_at" TIMESTAMP;
ALTER TABLE "conversation" ADD COLUMN "closed_at" TIMESTAMP;
CREATE INDEX "conversation_workspace_id_updated_at_id"
    ON "conversation" ("workspace_id", "updated_at", "id");
CREATE INDEX "conversation_workspace_id_created_at_id"
    ON "conversation" ("workspace_id", "created_at", "id");
CREATE INDEX "conversation_workspace_id_status_updated_at_id"
    ON "conversation" ("workspace_id", "status", "updated_at", "id");

CREATE TABLE "message" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "channel_id" TEXT,
    "contact_id" TEXT,
    "direction" TEXT NOT NULL,
    "sender_type" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "text" TEXT,
    "caption" TEXT,
    "media_url" TEXT,
    "media_mime_type" TEXT,
    "external_id" TEXT,
    "reply_to_id" TEXT,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "metadata" TEXT NOT NULL,
    "edit_history" TEXT NOT NULL,
    "edited_at" TIMESTAMP,
    "deleted_at" TIMESTAMP,
    "sent_at" TIMESTAMP,
    "delivered_at" TIMESTAMP,
    "read_at" TIMESTAMP,
    "failed_at" TIMESTAMP,
    "send_attempts" BIGINT NOT NULL,
    "lease_until" TIMESTAMP,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE SET NULL
);
-- A conversation's messages in order (also serves the conversation foreign key).
CREATE INDEX "message_conversation_id_created_at_id"
    ON "message" ("conversation_id", "created_at", "id");
-- Inbound idempotency: one message per network id on a channel.
CREATE UNIQUE INDEX "message_channel_id_external_id" ON "message" ("channel_id", "external_id");
-- The send job reads queued rows only.
CREATE INDEX "message_queued" ON "message" ("created_at") WHERE ("status" = 'queued');

CREATE TABLE "idempotency_key" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspace_id" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "fingerprint" TEXT NOT NULL,
    "resource_id" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    "expires_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "idempotency_key_workspace_id_key" ON "idempotency_key" ("workspace_id", "key");
CREATE INDEX "idempotency_key_expires_at" ON "idempotency_key" ("expires_at");
