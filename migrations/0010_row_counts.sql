-- Listing totals from counts kept by triggers instead of COUNT(*), which
-- walks every index entry of the workspace (models/counts.py). Custom fields
-- are counted per workspace and per is_archived.

CREATE TABLE IF NOT EXISTS "row_count" ("table_name" VARCHAR(255) NOT NULL, "workspace_id" VARCHAR(36) NOT NULL, "subset" INTEGER NOT NULL, "rows" INTEGER NOT NULL, PRIMARY KEY ("table_name", "workspace_id", "subset"), FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS "row_count_workspace_id" ON "row_count" ("workspace_id");

INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows")
SELECT 'custom_field', "workspace_id", "is_archived", count(*)
FROM "custom_field" GROUP BY "workspace_id", "is_archived";

CREATE TRIGGER "custom_field_counted_insert" AFTER INSERT ON "custom_field" BEGIN
    INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows")
    VALUES ('custom_field', NEW."workspace_id", NEW."is_archived", 1)
    ON CONFLICT ("table_name", "workspace_id", "subset") DO UPDATE SET "rows" = "rows" + 1;
END;

CREATE TRIGGER "custom_field_counted_delete" AFTER DELETE ON "custom_field" BEGIN
    UPDATE "row_count" SET "rows" = "rows" - 1
    WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
      AND "subset" = OLD."is_archived";
END;

CREATE TRIGGER "custom_field_counted_update" AFTER UPDATE OF "workspace_id", "is_archived" ON "custom_field"
WHEN OLD."workspace_id" IS NOT NEW."workspace_id" OR OLD."is_archived" IS NOT NEW."is_archived"
BEGIN
    UPDATE "row_count" SET "rows" = "rows" - 1
    WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
      AND "subset" = OLD."is_archived";
    INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows")
    VALUES ('custom_field', NEW."workspace_id", NEW."is_archived", 1)
    ON CONFLICT ("table_name", "workspace_id", "subset") DO UPDATE SET "rows" = "rows" + 1;
END;
