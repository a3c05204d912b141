-- Agents, knowledge (trainings with their FTS5 index), MCP servers and tools,
-- the credit ledger and conversation context entries.

-- At most one live default agent per workspace (deleted agents are soft-deleted).
CREATE UNIQUE INDEX "agent_one_default_per_workspace" ON "agent" ("workspace_id") WHERE (("is_default" = 1) AND ("deleted_at" IS NULL));
CREATE TABLE "training" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" DATETIME NOT NULL,
    "updated_at" DATETIME NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "agent_id" VARCHAR(36) NOT NULL,
    "type" VARCHAR(20) NOT NULL,
    "status" VARCHAR(20) NOT NULL,
    "failure_reason" TEXT,
    "title" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "question" TEXT NOT NULL,
    "answer" TEXT NOT NULL,
    "url" TEXT,
    "filename" VARCHAR(255),
    "search_rowid" INTEGER NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE
);
CREATE INDEX "training_workspace_id" ON "training" ("workspace_id");
CREATE UNIQUE INDEX "training_search_rowid" ON "training" ("search_rowid");
CREATE INDEX "training_agent_id_created_at" ON "training" ("agent_id", "created_at");
CREATE TABLE "mcp_server" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" DATETIME NOT NULL,
    "updated_at" DATETIME NOT NULL,
    "workspace_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "url" TEXT NOT NULL,
    "transport" VARCHAR(30) NOT NULL,
    "headers" TEXT NOT NULL,
    "is_active" INTEGER NOT NULL,
    "server_info" TEXT,
    "last_synced_at" DATETIME,
    "last_sync_attempt_at" DATETIME,
    "last_sync_error" TEXT,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "mcp_server_workspace_id" ON "mcp_server" ("workspace_id");
CREATE TABLE "mcp_tool" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "created_at" DATETIME NOT NULL,
    "updated_at" DATETIME NOT NULL,
    "server_id" VARCHAR(36) NOT NULL,
    "name" VARCHAR(200) NOT NULL,
    "description" TEXT NOT NULL,
    "input_schema" TEXT NOT NULL,
    FOREIGN KEY ("server_id") REFERENCES "mcp_server" ("id") ON DELETE CASCADE
);
CREATE INDEX "mcp_tool_server_id" ON "mcp_tool" ("server_id");
CREATE UNIQUE INDEX "mcp_tool_server_id_name" ON "mcp_tool" ("server_id", "name");
CREATE TABLE "agent_tool" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "agent_id" VARCHAR(36) NOT NULL,
    "tool_id" VARCHAR(36) NOT NULL,
    "created_at" DATETIME NOT NULL,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("tool_id") REFERENCES "mcp_tool" ("id") ON DELETE CASCADE
);
CREATE INDEX "agent_tool_tool_id" ON "agent_tool" ("tool_id");
CREATE UNIQUE INDEX "agent_tool_agent_id_tool_id" ON "agent_tool" ("agent_id", "tool_id");
CREATE TABLE "credit_usage" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "workspace_id" VARCHAR(36) NOT NULL,
    "agent_id" VARCHAR(36) NOT NULL,
    "conversation_id" VARCHAR(36),
    "credits" REAL NOT NULL,
    "created_at" DATETIME NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE SET NULL
);
CREATE INDEX "credit_usage_conversation_id" ON "credit_usage" ("conversation_id");
CREATE INDEX "credit_usage_agent_id_created_at" ON "credit_usage" ("agent_id", "created_at");
CREATE INDEX "credit_usage_workspace_id_created_at" ON "credit_usage" ("workspace_id", "created_at");
CREATE TABLE "context_entry" (
    "id" VARCHAR(36) NOT NULL PRIMARY KEY,
    "workspace_id" VARCHAR(36) NOT NULL,
    "agent_id" VARCHAR(36) NOT NULL,
    "conversation_id" VARCHAR(36) NOT NULL,
    "role" VARCHAR(20) NOT NULL,
    "content" TEXT NOT NULL,
    "created_at" DATETIME NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "context_entry_workspace_id" ON "context_entry" ("workspace_id");
CREATE INDEX "context_entry_agent_id" ON "context_entry" ("agent_id");
CREATE INDEX "context_entry_conversation_id_agent_id_created_at" ON "context_entry" ("conversation_id", "agent_id", "created_at");

-- The search index of trainings. Contentless (content=''): it stores only the
-- index, the text lives in "training". Its rowid is training.search_rowid.
-- Columns: title (title, or the question of a Q&A pair, weighted double) and
-- body (content, or the answer). Only ready trainings have text in the index.
-- Searches filter by agent through the join with "training" (an agent token in
-- the index would make every query walk that agent's whole doclist).
CREATE VIRTUAL TABLE "training_fts" USING fts5(
    title, body,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO "training_fts" ("training_fts", "rank") VALUES ('rank', 'bm25(2.0, 1.0)');

-- The triggers keep the index exact in the transaction of every write. A
-- contentless table deletes a row given the values it indexed, so the three
-- triggers must compute them with the same expressions.
CREATE TRIGGER "training_fts_after_insert" AFTER INSERT ON "training" BEGIN
    INSERT INTO "training_fts" (rowid, title, body) VALUES (
        new.search_rowid,
        CASE WHEN new.status <> 'ready' THEN '' WHEN new.type = 'qa' THEN new.question ELSE new.title END,
        CASE WHEN new.status <> 'ready' THEN '' WHEN new.type = 'qa' THEN new.answer ELSE new.content END
    );
END;
CREATE TRIGGER "training_fts_after_delete" AFTER DELETE ON "training" BEGIN
    INSERT INTO "training_fts" ("training_fts", rowid, title, body) VALUES (
        'delete',
        old.search_rowid,
        CASE WHEN old.status <> 'ready' THEN '' WHEN old.type = 'qa' THEN old.question ELSE old.title END,
        CASE WHEN old.status <> 'ready' THEN '' WHEN old.type = 'qa' THEN old.answer ELSE old.content END
    );
END;
CREATE TRIGGER "training_fts_after_update" AFTER UPDATE ON "training" BEGIN
    INSERT INTO "training_fts" ("training_fts", rowid, title, body) VALUES (
        'delete',
        old.search_rowid,
        CASE WHEN old.status <> 'ready' THEN '' WHEN old.type = 'qa' THEN old.question ELSE old.title END,
        CASE WHEN old.status <> 'ready' THEN '' WHEN old.type = 'qa' THEN old.answer ELSE old.content END
    );
    INSERT INTO "training_fts" (rowid, title, body) VALUES (
        new.search_rowid,
        CASE WHEN new.status <> 'ready' THEN '' WHEN new.type = 'qa' THEN new.question ELSE new.title END,
        CASE WHEN new.status <> 'ready' THEN '' WHEN new.type = 'qa' THEN new.answer ELSE new.content END
    );
END;
