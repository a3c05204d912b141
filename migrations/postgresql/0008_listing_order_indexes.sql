-- Listings sort by created_at with the id breaking ties; with the id in the
-- index SQLite reads a page in order and stops, instead of sorting ties.

DROP INDEX "custom_field_workspace_id_is_archived_created_at";
CREATE INDEX "custom_field_workspace_id_is_archived_created_at_id"
    ON "custom_field" ("workspace_id", "is_archived", "created_at", "id");

DROP INDEX "contact_workspace_id_created_at";
CREATE INDEX "contact_workspace_id_created_at_id" ON "contact" ("workspace_id", "created_at", "id");

DROP INDEX "training_agent_id_created_at";
CREATE INDEX "training_agent_id_created_at_id" ON "training" ("agent_id", "created_at", "id");

DROP INDEX "delivery_webhook_id_created_at";
CREATE INDEX "delivery_webhook_id_created_at_id" ON "delivery" ("webhook_id", "created_at", "id");

DROP INDEX "intention_agent_id_created_at";
CREATE INDEX "intention_agent_id_created_at_id" ON "intention" ("agent_id", "created_at", "id");

DROP INDEX "transfer_rule_agent_id_created_at";
CREATE INDEX "transfer_rule_agent_id_created_at_id"
    ON "transfer_rule" ("agent_id", "created_at", "id");

DROP INDEX "idle_action_agent_id_created_at";
CREATE INDEX "idle_action_agent_id_created_at_id" ON "idle_action" ("agent_id", "created_at", "id");
