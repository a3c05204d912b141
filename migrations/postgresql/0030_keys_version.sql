-- The table SQLite's migration creates, so that both engines have the same
-- tables, without its triggers: PostgreSQL reads a key with its rate-limit
-- hit in one statement (0029) and keeps none, so nothing reads the version
-- here, and every key's change would wait on its one row.

CREATE TABLE "keys_version" ("id" INTEGER NOT NULL PRIMARY KEY, "version" BIGINT NOT NULL);

INSERT INTO "keys_version" ("id", "version") VALUES (1, 0);
