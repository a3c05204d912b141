-- The sales side (issue 20): leads with their scoring rules, adjustments and
-- settings; the pipeline's columns, its opportunities and their moves.
-- Money is stored as integer minor units with its ISO 4217 code (money.py).

CREATE TABLE "lead" ("id" TEXT NOT NULL PRIMARY KEY, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, "workspace_id" TEXT NOT NULL, "contact_id" TEXT NOT NULL, "status" TEXT NOT NULL, "source" TEXT NOT NULL, "owner" TEXT, "notes" TEXT NOT NULL, "score" BIGINT NOT NULL, "score_reasons" TEXT NOT NULL, "adjustment" BIGINT NOT NULL, "facts" TEXT NOT NULL, "qualified_at" TIMESTAMP, "converted_at" TIMESTAMP, "opportunity_id" TEXT, FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE, FOREIGN KEY ("contact_id") REFERENCES "contact" ("id") ON DELETE CASCADE);
CREATE INDEX "lead_contact_id" ON "lead" ("contact_id");
CREATE UNIQUE INDEX "lead_workspace_id_contact_id" ON "lead" ("workspace_id", "contact_id");
CREATE INDEX "lead_workspace_id_created_at_id" ON "lead" ("workspace_id", "created_at", "id");
CREATE INDEX "lead_workspace_id_status_created_at_id" ON "lead" ("workspace_id", "status", "created_at", "id");
CREATE INDEX "lead_workspace_id_score_id" ON "lead" ("workspace_id", "score", "id");

CREATE TABLE "lead_adjustment" ("id" TEXT NOT NULL PRIMARY KEY, "lead_id" TEXT NOT NULL, "points" BIGINT NOT NULL, "reason" TEXT NOT NULL, "actor" TEXT NOT NULL, "created_at" TIMESTAMP NOT NULL, FOREIGN KEY ("lead_id") REFERENCES "lead" ("id") ON DELETE CASCADE);
CREATE INDEX "lead_adjustment_lead_id" ON "lead_adjustment" ("lead_id");

CREATE TABLE "scoring_rule" ("id" TEXT NOT NULL PRIMARY KEY, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, "workspace_id" TEXT NOT NULL, "name" TEXT NOT NULL, "kind" TEXT NOT NULL, "points" BIGINT NOT NULL, "params" TEXT NOT NULL, "is_active" BOOLEAN NOT NULL, FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE);
CREATE INDEX "scoring_rule_workspace_id_created_at_id" ON "scoring_rule" ("workspace_id", "created_at", "id");

CREATE TABLE "sales_settings" ("id" TEXT NOT NULL PRIMARY KEY, "workspace_id" TEXT NOT NULL, "qualify_threshold" BIGINT, "auto_create_leads" BOOLEAN NOT NULL, "updated_at" TIMESTAMP NOT NULL, FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE);
CREATE UNIQUE INDEX "sales_settings_workspace_id" ON "sales_settings" ("workspace_id");

CREATE TABLE "pipeline_column" ("id" TEXT NOT NULL PRIMARY KEY, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, "workspace_id" TEXT NOT NULL, "name" TEXT NOT NULL, "position" BIGINT NOT NULL, "probability" BIGINT NOT NULL, "kind" TEXT NOT NULL, FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE);
CREATE INDEX "pipeline_column_workspace_id_position" ON "pipeline_column" ("workspace_id", "position");

CREATE TABLE "opportunity" ("id" TEXT NOT NULL PRIMARY KEY, "created_at" TIMESTAMP NOT NULL, "updated_at" TIMESTAMP NOT NULL, "workspace_id" TEXT NOT NULL, "title" TEXT NOT NULL, "contact_id" TEXT, "lead_id" TEXT, "value_minor" BIGINT NOT NULL, "currency" TEXT NOT NULL, "column_id" TEXT NOT NULL, "owner" TEXT, "expected_close_date" DATE, "lost_reason" TEXT, "status" TEXT NOT NULL, "closed_at" TIMESTAMP, FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE, FOREIGN KEY ("contact_id") REFERENCES "contact" ("id") ON DELETE SET NULL, FOREIGN KEY ("lead_id") REFERENCES "lead" ("id") ON DELETE SET NULL, FOREIGN KEY ("column_id") REFERENCES "pipeline_column" ("id"));
CREATE INDEX "opportunity_contact_id" ON "opportunity" ("contact_id");
CREATE INDEX "opportunity_lead_id" ON "opportunity" ("lead_id");
CREATE INDEX "opportunity_column_id" ON "opportunity" ("column_id");
CREATE INDEX "opportunity_workspace_id_created_at_id" ON "opportunity" ("workspace_id", "created_at", "id");
CREATE INDEX "opportunity_workspace_id_updated_at_id" ON "opportunity" ("workspace_id", "updated_at", "id");

CREATE TABLE "opportunity_move" ("id" TEXT NOT NULL PRIMARY KEY, "opportunity_id" TEXT NOT NULL, "from_column_id" TEXT, "to_column_id" TEXT NOT NULL, "to_column_name" TEXT NOT NULL, "actor" TEXT, "moved_at" TIMESTAMP NOT NULL, FOREIGN KEY ("opportunity_id") REFERENCES "opportunity" ("id") ON DELETE CASCADE);
CREATE INDEX "opportunity_move_opportunity_id_moved_at_id" ON "opportunity_move" ("opportunity_id", "moved_at", "id");

-- The pipeline summary's figures, kept by the triggers below inside the
-- statement that changes an opportunity (models/opportunities.py,
-- PipelineTotal): values in two integer halves, never a float.
CREATE TABLE "pipeline_total" ("workspace_id" TEXT NOT NULL, "column_id" TEXT NOT NULL, "currency" TEXT NOT NULL, "opportunities" BIGINT NOT NULL, "value_high" BIGINT NOT NULL, "value_low" BIGINT NOT NULL, PRIMARY KEY ("workspace_id", "column_id", "currency"), FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE, FOREIGN KEY ("column_id") REFERENCES "pipeline_column" ("id") ON DELETE CASCADE);
CREATE INDEX "pipeline_total_column_id" ON "pipeline_total" ("column_id");

CREATE FUNCTION "opportunity_total"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        UPDATE "pipeline_total" SET
            "opportunities" = "opportunities" - 1,
            "value_high" = "value_high" - (OLD."value_minor" >> 30),
            "value_low" = "value_low" - (OLD."value_minor" & 1073741823)
        WHERE "workspace_id" = OLD."workspace_id" AND "column_id" = OLD."column_id"
          AND "currency" = OLD."currency";
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO "pipeline_total" ("workspace_id", "column_id", "currency", "opportunities", "value_high", "value_low")
        VALUES (NEW."workspace_id", NEW."column_id", NEW."currency", 1, NEW."value_minor" >> 30, NEW."value_minor" & 1073741823)
        ON CONFLICT ("workspace_id", "column_id", "currency") DO UPDATE SET
            "opportunities" = "pipeline_total"."opportunities" + 1,
            "value_high" = "pipeline_total"."value_high" + excluded."value_high",
            "value_low" = "pipeline_total"."value_low" + excluded."value_low";
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "opportunity_total_insert" AFTER INSERT ON "opportunity"
    FOR EACH ROW EXECUTE FUNCTION "opportunity_total"();
CREATE TRIGGER "opportunity_total_delete" AFTER DELETE ON "opportunity"
    FOR EACH ROW EXECUTE FUNCTION "opportunity_total"();
CREATE TRIGGER "opportunity_total_update"
AFTER UPDATE OF "workspace_id", "column_id", "currency", "value_minor" ON "opportunity"
    FOR EACH ROW EXECUTE FUNCTION "opportunity_total"();

-- The direction of each conversation's latest message, kept by a trigger on
-- message: "unread" (the contact wrote last) in the interactions query is a
-- column, and a page and its count by channel, status and unread read one
-- index. A message stored with an earlier time than one already there
-- (a network's late delivery) does not change it.
ALTER TABLE "conversation" ADD COLUMN "last_direction" TEXT;
-- (PostgreSQL keeps 63 bytes of a name: SQLite's is one longer.)
CREATE INDEX "conversation_workspace_id_channel_id_status_last_directi_ad1c1b" ON "conversation" ("workspace_id", "channel_id", "status", "last_direction", "updated_at");

-- The conversation's last_message_at is still the previous message's time
-- here (the service moves it after storing the message): a message older
-- than that changes nothing, and neither does one in the same direction
-- (the UPDATE then finds no row, and writes nothing).
CREATE FUNCTION "message_last_direction"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    UPDATE "conversation" SET "last_direction" = NEW."direction"
    WHERE "id" = NEW."conversation_id" AND "last_direction" IS DISTINCT FROM NEW."direction"
      AND ("last_message_at" IS NULL OR "last_message_at" <= NEW."created_at");
    RETURN NULL;
END;
$$;
CREATE TRIGGER "message_last_direction" AFTER INSERT ON "message"
    FOR EACH ROW EXECUTE FUNCTION "message_last_direction"();
