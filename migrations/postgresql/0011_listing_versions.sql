-- Each counted subset of rows (models/counts.py) also keeps a version, which
-- every insert, update and delete of its rows moves forward: a page rendered
-- at one version is the page for as long as the version stands, so it can be
-- served again from memory (models/pagination.py).

ALTER TABLE "row_count" ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0;

DROP TRIGGER "custom_field_counted_insert" ON "custom_field";
DROP TRIGGER "custom_field_counted_delete" ON "custom_field";
DROP TRIGGER "custom_field_counted_update" ON "custom_field";

-- Any change of any column: the row is counted out of its old subset and
-- into its new one, which moves both versions (the same subset's twice when
-- the row stays in it, which changes nothing else).
CREATE OR REPLACE FUNCTION "custom_field_counted"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "row_count" SET "rows" = "rows" - 1, "version" = "version" + 1
        WHERE "table_name" = 'custom_field' AND "workspace_id" = OLD."workspace_id"
          AND "subset" = OLD."is_archived"::int;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO "row_count" ("table_name", "workspace_id", "subset", "rows", "version")
        VALUES ('custom_field', NEW."workspace_id", NEW."is_archived"::int, 1, 1)
        ON CONFLICT ("table_name", "workspace_id", "subset")
        DO UPDATE SET "rows" = "row_count"."rows" + 1, "version" = "row_count"."version" + 1;
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "custom_field_counted_insert" AFTER INSERT ON "custom_field"
    FOR EACH ROW EXECUTE FUNCTION "custom_field_counted"();
CREATE TRIGGER "custom_field_counted_delete" AFTER DELETE ON "custom_field"
    FOR EACH ROW EXECUTE FUNCTION "custom_field_counted"();
CREATE TRIGGER "custom_field_counted_update" AFTER UPDATE ON "custom_field"
    FOR EACH ROW EXECUTE FUNCTION "custom_field_counted"();
