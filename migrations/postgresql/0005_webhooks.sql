-- Outbound webhooks: registrations, one delivery per event and webhook
-- (created with the event), and every attempt made to deliver it.

CREATE TABLE "webhook" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "status" TEXT NOT NULL,
    "secret" TEXT NOT NULL,
    "previous_secret" TEXT,
    "previous_secret_expires_at" TIMESTAMP,
    "consecutive_failures" BIGINT NOT NULL,
    "last_success_at" TIMESTAMP,
    "last_failure_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "webhook_workspace_id" ON "webhook" ("workspace_id");
CREATE UNIQUE INDEX "webhook_workspace_id_url" ON "webhook" ("workspace_id", "url");

CREATE TABLE "delivery" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "body" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "attempt_count" BIGINT NOT NULL,
    "round_start" BIGINT NOT NULL,
    "next_attempt_at" TIMESTAMP,
    "lease_until" TIMESTAMP,
    "claim_token" TEXT,
    "completed_at" TIMESTAMP,
    FOREIGN KEY ("webhook_id") REFERENCES "webhook" ("id") ON DELETE CASCADE
);
CREATE INDEX "delivery_webhook_id" ON "delivery" ("webhook_id");
CREATE INDEX "delivery_status_next_attempt_at" ON "delivery" ("status", "next_attempt_at");
CREATE INDEX "delivery_webhook_id_created_at" ON "delivery" ("webhook_id", "created_at");
CREATE INDEX "delivery_lease_until" ON "delivery" ("lease_until");
CREATE INDEX "delivery_created_at" ON "delivery" ("created_at");

CREATE TABLE "delivery_attempt" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "delivery_id" TEXT NOT NULL,
    "number" BIGINT NOT NULL,
    "attempted_at" TIMESTAMP NOT NULL,
    "success" BOOLEAN NOT NULL,
    "http_status" BIGINT,
    "response_time_ms" BIGINT,
    "error" TEXT,
    "response_body" TEXT,
    FOREIGN KEY ("delivery_id") REFERENCES "delivery" ("id") ON DELETE CASCADE
);
CREATE INDEX "delivery_attempt_delivery_id" ON "delivery_attempt" ("delivery_id");
CREATE INDEX "delivery_attempt_delivery_id_number" ON "delivery_attempt" ("delivery_id", "number");
