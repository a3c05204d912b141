-- Foundation: tenancy, API keys, runtime flags, custom fields, the events
-- outbox, and the first columns of agents, channels, contacts and conversations
-- (later migrations add to those).

-- PostgreSQL's form of migrations/0001_foundation.sql (see migrate.py).
-- SQLite's VARCHAR(n) bounds nothing: its columns are TEXT here, so a value
-- SQLite stores (an encrypted secret longer than its column's n) is stored
-- here too; lengths are the service's to check, on both engines.

-- Names unique whatever their case (SQLite: the collation UNICODE_NOCASE of
-- db.py, which folds case fully): ICU's root locale at secondary strength,
-- where case differs only at the third. Unquoted, as peewee writes it.
CREATE COLLATION unicode_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

CREATE TABLE "company" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "name" TEXT NOT NULL
);
CREATE TABLE "workspace" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "company_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    FOREIGN KEY ("company_id") REFERENCES "company" ("id") ON DELETE CASCADE
);
CREATE INDEX "workspace_company_id" ON "workspace" ("company_id");
CREATE TABLE "agent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "is_default" BOOLEAN NOT NULL,
    "workflow_type" TEXT NOT NULL,
    "language" TEXT NOT NULL,
    "tone" TEXT NOT NULL,
    "personality" TEXT NOT NULL,
    "greeting_message" TEXT NOT NULL,
    "custom_instructions" TEXT NOT NULL,
    "business_context" TEXT NOT NULL,
    "settings" TEXT NOT NULL,
    "deleted_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "agent_workspace_id" ON "agent" ("workspace_id");
CREATE TABLE "api_key" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "lookup_id" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "scopes" TEXT NOT NULL,
    "last_used_at" TIMESTAMP,
    "revoked_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "api_key_workspace_id" ON "api_key" ("workspace_id");
CREATE UNIQUE INDEX "api_key_lookup_id" ON "api_key" ("lookup_id");
CREATE TABLE "channel" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "agent_id" TEXT,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "settings" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "channel_workspace_id" ON "channel" ("workspace_id");
CREATE INDEX "channel_agent_id" ON "channel" ("agent_id");
CREATE TABLE "contact" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "phone" TEXT,
    "email" TEXT,
    "custom_fields" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "contact_workspace_id" ON "contact" ("workspace_id");
CREATE TABLE "conversation" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "contact_id" TEXT,
    "channel_id" TEXT,
    "agent_id" TEXT,
    "status" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("contact_id") REFERENCES "contact" ("id") ON DELETE SET NULL,
    FOREIGN KEY ("channel_id") REFERENCES "channel" ("id") ON DELETE SET NULL,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "conversation_workspace_id" ON "conversation" ("workspace_id");
CREATE INDEX "conversation_contact_id" ON "conversation" ("contact_id");
CREATE INDEX "conversation_channel_id" ON "conversation" ("channel_id");
CREATE INDEX "conversation_agent_id" ON "conversation" ("agent_id");
CREATE TABLE "custom_field" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "field_type" TEXT NOT NULL,
    "options" TEXT NOT NULL,
    "is_required" BOOLEAN NOT NULL,
    "display_order" BIGINT NOT NULL,
    "is_archived" BOOLEAN NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "custom_field_workspace_id" ON "custom_field" ("workspace_id");
CREATE INDEX "custom_field_workspace_id_is_archived_created_at" ON "custom_field" ("workspace_id", "is_archived", "created_at");
CREATE TABLE "event" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "data" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "event_workspace_id" ON "event" ("workspace_id");
CREATE INDEX "event_workspace_id_created_at" ON "event" ("workspace_id", "created_at");
CREATE TABLE "runtime_flag" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "is_enabled" BOOLEAN NOT NULL
);
