-- Agents, knowledge (trainings with their FTS5 index), MCP servers and tools,
-- the credit ledger and conversation context entries.

-- At most one live default agent per workspace (deleted agents are soft-deleted).
CREATE UNIQUE INDEX "agent_one_default_per_workspace" ON "agent" ("workspace_id") WHERE ("is_default" AND ("deleted_at" IS NULL));
CREATE TABLE "training" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "failure_reason" TEXT,
    "title" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "question" TEXT NOT NULL,
    "answer" TEXT NOT NULL,
    "url" TEXT,
    "filename" TEXT,
    "search_rowid" BIGINT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE
);
CREATE INDEX "training_workspace_id" ON "training" ("workspace_id");
CREATE UNIQUE INDEX "training_search_rowid" ON "training" ("search_rowid");
CREATE INDEX "training_agent_id_created_at" ON "training" ("agent_id", "created_at");
CREATE TABLE "mcp_server" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "url" TEXT NOT NULL,
    "transport" TEXT NOT NULL,
    "headers" TEXT NOT NULL,
    "is_active" BOOLEAN NOT NULL,
    "server_info" TEXT,
    "last_synced_at" TIMESTAMP,
    "last_sync_attempt_at" TIMESTAMP,
    "last_sync_error" TEXT,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE INDEX "mcp_server_workspace_id" ON "mcp_server" ("workspace_id");
CREATE TABLE "mcp_tool" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "server_id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "input_schema" TEXT NOT NULL,
    FOREIGN KEY ("server_id") REFERENCES "mcp_server" ("id") ON DELETE CASCADE
);
CREATE INDEX "mcp_tool_server_id" ON "mcp_tool" ("server_id");
CREATE UNIQUE INDEX "mcp_tool_server_id_name" ON "mcp_tool" ("server_id", "name");
CREATE TABLE "agent_tool" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "agent_id" TEXT NOT NULL,
    "tool_id" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("tool_id") REFERENCES "mcp_tool" ("id") ON DELETE CASCADE
);
CREATE INDEX "agent_tool_tool_id" ON "agent_tool" ("tool_id");
CREATE UNIQUE INDEX "agent_tool_agent_id_tool_id" ON "agent_tool" ("agent_id", "tool_id");
CREATE TABLE "credit_usage" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspace_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "conversation_id" TEXT,
    "credits" DOUBLE PRECISION NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE SET NULL
);
CREATE INDEX "credit_usage_conversation_id" ON "credit_usage" ("conversation_id");
CREATE INDEX "credit_usage_agent_id_created_at" ON "credit_usage" ("agent_id", "created_at");
CREATE INDEX "credit_usage_workspace_id_created_at" ON "credit_usage" ("workspace_id", "created_at");
CREATE TABLE "context_entry" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "workspace_id" TEXT NOT NULL,
    "agent_id" TEXT NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "content" TEXT NOT NULL,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE CASCADE
);
CREATE INDEX "context_entry_workspace_id" ON "context_entry" ("workspace_id");
CREATE INDEX "context_entry_agent_id" ON "context_entry" ("agent_id");
CREATE INDEX "context_entry_conversation_id_agent_id_created_at" ON "context_entry" ("conversation_id", "agent_id", "created_at");

-- Words as SQLite's FTS5 tokenizers see them: every ASCII punctuation mark
-- separates words (unicode61: "e-mail", "a@b.com" and "1.5" are two or
-- three words; PostgreSQL's parser would keep an address or a number
-- whole), and accents are folded (remove_diacritics: the unaccent
-- extension, in Debian's postgresql package; trusted, so the database's
-- owner may create it). The words of trainings are then stemmed by the
-- english snowball stemmer (FTS5's porter), with no stop words (FTS5 has
-- none: "what is" finds what it finds there); those of messages are kept
-- as they are ('simple', as FTS5's unicode61).
CREATE EXTENSION IF NOT EXISTS unaccent;
CREATE FUNCTION "search_text"(text TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT regexp_replace(coalesce(text, ''), '[!-/:-@[-`{-~]+', ' ', 'g')
$$;
CREATE TEXT SEARCH DICTIONARY "english_stem_all" (TEMPLATE = snowball, LANGUAGE = english);
CREATE TEXT SEARCH CONFIGURATION "knowledge_words" (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION "knowledge_words"
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part,
        numword, numhword, hword_numpart
    WITH unaccent, english_stem_all;
CREATE TEXT SEARCH CONFIGURATION "message_words" (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION "message_words"
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part,
        numword, numhword, hword_numpart
    WITH unaccent, simple;

-- The search index of trainings (SQLite: the FTS5 table training_fts). One
-- row per training, keyed by training.search_rowid: the title (title, or the
-- question of a Q&A pair) weighted A and the body (content, or the answer)
-- weighted B, in knowledge_words. Only ready trainings have words in it.
-- Searches join it with "training" on search_rowid and filter by agent there.
CREATE TABLE "training_fts" (
    "search_rowid" BIGINT NOT NULL PRIMARY KEY,
    "document" TSVECTOR NOT NULL
);
CREATE INDEX "training_fts_document" ON "training_fts" USING GIN ("document");

-- The trigger keeps the index exact in the transaction of every write.
CREATE FUNCTION "training_fts_sync"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM "training_fts" WHERE "search_rowid" = OLD."search_rowid";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO "training_fts" ("search_rowid", "document") VALUES (
            NEW."search_rowid",
            CASE WHEN NEW."status" <> 'ready' THEN ''::tsvector ELSE
                setweight(to_tsvector('knowledge_words', "search_text"(CASE WHEN NEW."type" = 'qa'
                    THEN NEW."question" ELSE NEW."title" END)), 'A')
                || setweight(to_tsvector('knowledge_words', "search_text"(CASE WHEN NEW."type" = 'qa'
                    THEN NEW."answer" ELSE NEW."content" END)), 'B')
            END
        );
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "training_fts_after_write" AFTER INSERT OR UPDATE OR DELETE ON "training"
    FOR EACH ROW EXECUTE FUNCTION "training_fts_sync"();
