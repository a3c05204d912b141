-- Replies that ask back and learn: the clarifying questions the agent asked
-- on a conversation, the choices it offered and what the customer chose.

CREATE TABLE "clarification" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "conversation_id" VARCHAR(36) NOT NULL,
    "agent_id" VARCHAR(36) NOT NULL,
    "message_id" VARCHAR(36) NOT NULL,
    "asked_about_id" VARCHAR(36) NOT NULL,
    "choices" TEXT NOT NULL,
    "status" VARCHAR(20) NOT NULL,
    "chosen_training_id" VARCHAR(36),
    "reply_message_id" VARCHAR(36),
    "resolved_at" TIMESTAMP,
    "expires_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "clarification_conversation_id_created_at"
    ON "clarification" ("conversation_id", "created_at");
