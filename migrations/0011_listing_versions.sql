-- Each counted subset of rows (models/counts.py) also keeps a version, which
-- every insert, update and delete of its rows moves forward: a page rendered
-- at one version is the page for as long as the version stands, so it can be
-- served again from memory (models/pagination.py).

ALTER TABLE "row_count" ADD COLUMN "version" INTEGER NOT NULL DEFAULT 0;

DROP TRIGGER IF EXISTS "custom_field_counted_insert";
DROP TRIGGER IF EXISTS "custom_field_counted_delete";
DROP TRIGGER IF EXISTS "custom_field_counted_update";

CREATE TRIGGER "custom_field_counted_insert" AFTER INSERT ON "custom_field" BEGIN
    INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows", "version")
    VALUES ('custom_field', NEW."workspace_id", NEW."is_archived", 1, 1)
    ON CONFLICT ("table_name", "workspace_id", "subset")
    DO UPDATE SET "rows" = "rows" + 1, "version" = "version" + 1;
END;

CREATE TRIGGER "custom_field_counted_delete" AFTER DELETE ON "custom_field" BEGIN
    UPDATE "row_count" SET "rows" = "rows" - 1, "version" = "version" + 1
    WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
      AND "subset" = OLD."is_archived";
END;

-- Any change of any column: the row is counted out of its old subset and
-- into its new one, which moves both versions (the same subset's twice when
-- the row stays in it, which changes nothing else).
CREATE TRIGGER "custom_field_counted_update" AFTER UPDATE ON "custom_field" BEGIN
    UPDATE "row_count"
    SET "rows" = "rows" - 1, "version" = "version" + 1
    WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
      AND "subset" = OLD."is_archived";
    INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows", "version")
    VALUES ('custom_field', NEW."workspace_id", NEW."is_archived", 1, 1)
    ON CONFLICT ("table_name", "workspace_id", "subset")
    DO UPDATE SET "rows" = "rows" + 1, "version" = "version" + 1;
END;
