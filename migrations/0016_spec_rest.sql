-- Issue 21, the rest of the specification.

-- Keys that held every scope (the first admin key, `keys create --scopes all`)
-- were meant to hold all of them: they gain the two new permissions scopes.
UPDATE "api_key"
SET "scopes" = (
    SELECT json_group_array("value") FROM (
        SELECT "value" FROM json_each("api_key"."scopes")
        UNION SELECT 'permissions:read'
        UNION SELECT 'permissions:write'
        ORDER BY 1
    )
)
WHERE (
    SELECT count(*) FROM json_each("api_key"."scopes") WHERE "value" IN (
    'agents:read', 'agents:write', 'agents:delete', 'trainings:read',
    'trainings:write', 'channels:read', 'channels:write', 'contacts:read',
    'contacts:write', 'conversations:read', 'messages:read', 'messages:write',
    'messages:delete', 'chats:write', 'custom-fields:read', 'custom-fields:write',
    'mcp:read', 'mcp:write', 'webhooks:read', 'webhooks:write',
    'webhooks:delete', 'leads:read', 'leads:write', 'pipeline:read',
    'pipeline:write', 'interactions:read', 'interactions:write', 'intentions:read',
    'intentions:write', 'idle-actions:read', 'idle-actions:write', 'transfer-rules:read',
    'transfer-rules:write'
    )
) = 33;

-- Billing without a payment provider: each workspace's plan and trial end,
-- and when trial.expiring / trial.expired were raised for that trial end.
ALTER TABLE "workspace" ADD COLUMN "plan" VARCHAR(50) NOT NULL DEFAULT 'free';
ALTER TABLE "workspace" ADD COLUMN "trial_ends_at" DATETIME;
ALTER TABLE "workspace" ADD COLUMN "trial_expiring_raised_at" DATETIME;
ALTER TABLE "workspace" ADD COLUMN "trial_expired_raised_at" DATETIME;
CREATE INDEX "workspace_trial_ends_at" ON "workspace" ("trial_ends_at");

-- Per-agent webhooks and the agent's history: the agent an event concerns
-- (rows from before stay without one), and webhooks limited to one agent.
ALTER TABLE "event" ADD COLUMN "agent_id" VARCHAR(36);
-- Partial: most events concern no agent, and need not be written to it.
CREATE INDEX "event_agent_id_created_at" ON "event" ("agent_id", "created_at")
    WHERE "agent_id" IS NOT NULL;
ALTER TABLE "webhook" ADD COLUMN "agent_id" VARCHAR(36)
    REFERENCES "agent" ("id") ON DELETE CASCADE;
CREATE INDEX "webhook_agent_id" ON "webhook" ("agent_id");
