-- The reply engine: reply jobs (written with the customer's message, claimed
-- with a lease), per-conversation marks, and the agents' routing rules
-- (intentions, transfer rules, idle actions and the runs of idle actions).

CREATE TABLE "reply_job" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "due_at" TIMESTAMP NOT NULL,
    "attempts" BIGINT NOT NULL,
    "lease_until" TIMESTAMP,
    "claim_token" TEXT,
    "outcome" TEXT,
    "detail" TEXT,
    "last_error" TEXT,
    "transfers" BIGINT NOT NULL,
    "finished_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "reply_job_status_due_at" ON "reply_job" ("status", "due_at");
CREATE INDEX "reply_job_conversation_id_status" ON "reply_job" ("conversation_id", "status");

CREATE TABLE "reply_state" (
    "conversation_id" TEXT NOT NULL PRIMARY KEY,
    "last_customer_at" TIMESTAMP,
    "answered_through" TIMESTAMP,
    "updated_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "reply_state_last_customer_at" ON "reply_state" ("last_customer_at");

CREATE TABLE "intention" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "agent_id" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "examples" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "reply_text" TEXT,
    "url" TEXT,
    "tag" TEXT,
    "target_agent_id" TEXT,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("target_agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "intention_agent_id_created_at" ON "intention" ("agent_id", "created_at");

CREATE TABLE "transfer_rule" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "agent_id" TEXT NOT NULL,
    "priority" BIGINT NOT NULL,
    "match_type" TEXT NOT NULL,
    "keywords" TEXT NOT NULL,
    "pattern" TEXT,
    "intention_id" TEXT,
    "action" TEXT NOT NULL,
    "target_agent_id" TEXT,
    "message" TEXT,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("intention_id") REFERENCES "intention" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("target_agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "transfer_rule_agent_id_created_at" ON "transfer_rule" ("agent_id", "created_at");
CREATE INDEX "transfer_rule_intention_id" ON "transfer_rule" ("intention_id");

CREATE TABLE "idle_action" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "agent_id" TEXT NOT NULL,
    "minutes" BIGINT NOT NULL,
    "action" TEXT NOT NULL,
    "message" TEXT,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE
);
CREATE INDEX "idle_action_agent_id_created_at" ON "idle_action" ("agent_id", "created_at");

CREATE TABLE "idle_action_run" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "idle_action_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "idle_since" TIMESTAMP NOT NULL,
    "outcome" TEXT NOT NULL,
    "ran_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("idle_action_id") REFERENCES "idle_action" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "idle_action_run_conversation_id" ON "idle_action_run" ("conversation_id");
CREATE UNIQUE INDEX "idle_action_run_idle_action_id_conversation_id_idle_since"
    ON "idle_action_run" ("idle_action_id", "conversation_id", "idle_since");
