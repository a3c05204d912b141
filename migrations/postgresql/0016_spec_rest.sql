-- Issue 21, the rest of the specification.

-- (The SQLite migration gave keys that held every scope the two new
-- permissions scopes: no PostgreSQL database predates this one.)
-- Billing without a payment provider: each workspace's plan and trial end,
-- and when trial.expiring / trial.expired were raised for that trial end.
ALTER TABLE "workspace" ADD COLUMN "plan" TEXT NOT NULL DEFAULT 'free';
ALTER TABLE "workspace" ADD COLUMN "trial_ends_at" TIMESTAMP;
ALTER TABLE "workspace" ADD COLUMN "trial_expiring_raised_at" TIMESTAMP;
ALTER TABLE "workspace" ADD COLUMN "trial_expired_raised_at" TIMESTAMP;
CREATE INDEX "workspace_trial_ends_at" ON "workspace" ("trial_ends_at");

-- Per-agent webhooks and the agent's history: the agent an event concerns
-- (rows from before stay without one), and webhooks limited to one agent.
ALTER TABLE "event" ADD COLUMN "agent_id" TEXT;
-- Partial: most events concern no agent, and need not be written to it.
CREATE INDEX "event_agent_id_created_at" ON "event" ("agent_id", "created_at")
    WHERE "agent_id" IS NOT NULL;
ALTER TABLE "webhook" ADD COLUMN "agent_id" TEXT
    REFERENCES "agent" ("id") ON DELETE CASCADE;
CREATE INDEX "webhook_agent_id" ON "webhook" ("agent_id");
