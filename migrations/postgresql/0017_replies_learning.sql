-- Replies that ask back and learn: the clarifying questions the agent asked
-- on a conversation, the choices it offered and what the customer chose.

CREATE TABLE "clarification" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "message_id" TEXT NOT NULL,
    "asked_about_id" TEXT NOT NULL,
    "choices" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "chosen_training_id" TEXT,
    "reply_message_id" TEXT,
    "resolved_at" TIMESTAMP,
    "expires_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "clarification_conversation_id_created_at"
    ON "clarification" ("conversation_id", "created_at");
