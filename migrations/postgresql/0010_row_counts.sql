-- Listing totals from counts kept by triggers instead of COUNT(*), which
-- walks every index entry of the workspace (models/counts.py). Custom fields
-- are counted per workspace and per is_archived.

CREATE TABLE IF NOT EXISTS "row_count" ("table_name" TEXT NOT NULL, "workspace_id" TEXT NOT NULL, "subset" BIGINT NOT NULL, "rows" BIGINT NOT NULL, PRIMARY KEY ("table_name", "workspace_id", "subset"), FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE);
CREATE INDEX IF NOT EXISTS "row_count_workspace_id" ON "row_count" ("workspace_id");

-- (The SQLite migration counted the rows already there: no PostgreSQL
-- database predates this one.) is_archived is counted as 0 or 1.
CREATE FUNCTION "custom_field_counted"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "row_count" SET "rows" = "rows" - 1
        WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
          AND "subset" = OLD."is_archived"::int;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows")
        VALUES ('custom_field', NEW."workspace_id", NEW."is_archived"::int, 1)
        ON CONFLICT ("table_name", "workspace_id", "subset")
        DO UPDATE SET "rows" = "row_count"."rows" + 1;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "custom_field_counted_insert" AFTER INSERT ON "custom_field"
    FOR EACH ROW EXECUTE FUNCTION "custom_field_counted"();
CREATE TRIGGER "custom_field_counted_delete" AFTER DELETE ON "custom_field"
    FOR EACH ROW EXECUTE FUNCTION "custom_field_counted"();
CREATE TRIGGER "custom_field_counted_update" AFTER UPDATE OF "workspace_id", "is_archived" ON "custom_field"
    FOR EACH ROW WHEN (OLD."workspace_id" IS DISTINCT FROM NEW."workspace_id"
                       OR OLD."is_archived" IS DISTINCT FROM NEW."is_archived")
    EXECUTE FUNCTION "custom_field_counted"();
