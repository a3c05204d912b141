-- Foundation: tenancy, API keys, runtime flags, custom fields, the events
-- outbox, and the first columns of agents, channels, contacts and conversations
-- (later migrations add to those).

-- Names unique whatever their case (SQLite: the collation UNICODE_NOCASE of
-- db.py, which folds case fully): ICU's root locale at secondary strength,
-- where case differs only at the third. Unquoted, as peewee writes it.
CREATE COLLATION unicode_nocase (provider = icu, locale = 'und-u-ks-level2', deterministic = false);

CREATE TABLE "company" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "name" VARCHAR(200) NOT NULL
);
CREATE TABLE "workspace" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "company_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    FOREIGN KEY ("company_id") REFERENCES "company" ("id") ON DELETE CASCADE
);
CREATE INDEX "workspace_company_id" ON "workspace" ("company_id");
CREATE TABLE "agent" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "description" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "is_default" BOOLEAN NOT NULL,
    "workflow_type" VARCHAR(50) NOT NULL,
    "language" VARCHAR(35) NOT NULL,
    "tone" VARCHAR(50) NOT NULL,
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
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "lookup_id" VARCHAR(32) NOT NULL,
    "key_hash" VARCHAR(64) NOT NULL,
    "scopes" TEXT NOT NULL,
    "last_used_at" TIMESTAMP,
    "revoked_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "api_key_workspace_id" ON "api_key" ("workspace_id");
CREATE UNIQUE INDEX "api_key_lookup_id" ON "api_key" ("lookup_id");
CREATE TABLE "channel" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "agent_id" VARCHAR(36),
    "name" VARCHAR(200) NOT NULL,
    "type" VARCHAR(20) NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "settings" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "channel_workspace_id" ON "channel" ("workspace_id");
CREATE INDEX "channel_agent_id" ON "channel" ("agent_id");
CREATE TABLE "contact" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "phone" VARCHAR(20),
    "email" VARCHAR(254),
    "custom_fields" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "contact_workspace_id" ON "contact" ("workspace_id");
CREATE TABLE "conversation" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "contact_id" VARCHAR(36),
    "channel_id" VARCHAR(36),
    "agent_id" VARCHAR(36),
    "status" VARCHAR(20) NOT NULL,
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
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(100) NOT NULL,
    "field_type" VARCHAR(20) NOT NULL,
    "options" TEXT NOT NULL,
    "is_required" BOOLEAN NOT NULL,
    "display_order" BIGINT NOT NULL,
    "is_archived" BOOLEAN NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "custom_field_workspace_id" ON "custom_field" ("workspace_id");
CREATE INDEX "custom_field_workspace_id_is_archived_created_at" ON "custom_field" ("workspace_id", "is_archived", "created_at");
CREATE TABLE "event" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(64) NOT NULL,
    "data" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "event_workspace_id" ON "event" ("workspace_id");
CREATE INDEX "event_workspace_id_created_at" ON "event" ("workspace_id", "created_at");
CREATE TABLE "runtime_flag" (
    "id" VARCHAR(100) NOT NULL PRIMARY KEY,
    "is_enabled" BOOLEAN NOT NULL
);
