-- One row whose version every change of an API key moves forward: a
-- serving process keeps the keys requests named, each with the version it
-- was read at, and reads a key anew only once the version has moved
-- (models/tenancy.py, KeptKeys). The triggers run inside the statement
-- that changes the key, whoever writes it (the CLI included), and a
-- workspace's deletion deletes its keys through the foreign key, which
-- fires them as well.

CREATE TABLE "keys_version" ("id" INTEGER NOT NULL PRIMARY KEY, "version" INTEGER NOT NULL);

INSERT INTO "keys_version" ("id", "version") VALUES (1, 0);

CREATE TRIGGER "api_key_versioned_insert" AFTER INSERT ON "api_key" BEGIN
    UPDATE "keys_version" SET "version" = "version" + 1;
END;

CREATE TRIGGER "api_key_versioned_update" AFTER UPDATE ON "api_key" BEGIN
    UPDATE "keys_version" SET "version" = "version" + 1;
END;

CREATE TRIGGER "api_key_versioned_delete" AFTER DELETE ON "api_key" BEGIN
    UPDATE "keys_version" SET "version" = "version" + 1;
END;
