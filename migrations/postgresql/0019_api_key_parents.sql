-- API keys minted by other keys (POST /workspaces/permissions): the key
-- that minted each one, and the root of that chain (a key made by the CLI or
-- at first start). Revoking a key revokes every key minted from it, and the
-- rate limit counts a key's requests against its root. Keys minted before
-- this migration recorded no parent: they stay roots of their own.

ALTER TABLE "api_key" ADD COLUMN "parent_id" TEXT REFERENCES "api_key" ("id") ON DELETE CASCADE;
ALTER TABLE "api_key" ADD COLUMN "root_id" TEXT REFERENCES "api_key" ("id") ON DELETE CASCADE;
CREATE INDEX "api_key_parent_id" ON "api_key" ("parent_id");
CREATE INDEX "api_key_root_id" ON "api_key" ("root_id");
