-- Appointments: the workspace's appointment settings (time zone, reminder
-- offsets), availability (the workspace's, or an agent's own), the
-- appointments themselves and the reminders done for them.

CREATE TABLE "appointment_settings" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "time_zone" TEXT NOT NULL,
    "reminder_offsets" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "appointment_settings_workspace_id" ON "appointment_settings" ("workspace_id");

CREATE TABLE "availability" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "agent_id" TEXT,
    "weekly_hours" TEXT NOT NULL,
    "slot_minutes" BIGINT NOT NULL,
    "buffer_minutes" BIGINT NOT NULL,
    "holidays" TEXT NOT NULL,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE CASCADE
);
CREATE INDEX "availability_workspace_id_agent_id" ON "availability" ("workspace_id", "agent_id");

CREATE TABLE "appointment" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "created_at" TIMESTAMP NOT NULL,
    "updated_at" TIMESTAMP NOT NULL,
    "workspace_id" TEXT NOT NULL,
    "contact_id" TEXT NOT NULL,
    "conversation_id" TEXT,
    "agent_id" TEXT,
    "start_at" TIMESTAMP NOT NULL,
    "end_at" TIMESTAMP NOT NULL,
    "title" TEXT NOT NULL,
    "notes" TEXT NOT NULL,
    "location" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "reschedule_count" BIGINT NOT NULL,
    "cancel_reason" TEXT,
    "canceled_at" TIMESTAMP,
    "completed_at" TIMESTAMP,
    "next_reminder_at" TIMESTAMP,
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("contact_id") REFERENCES "contact" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("conversation_id") REFERENCES "conversation" ("id") ON DELETE SET NULL,
    FOREIGN KEY ("agent_id") REFERENCES "agent" ("id") ON DELETE SET NULL
);
CREATE INDEX "appointment_contact_id" ON "appointment" ("contact_id");
CREATE INDEX "appointment_conversation_id" ON "appointment" ("conversation_id");
CREATE INDEX "appointment_next_reminder_at" ON "appointment" ("next_reminder_at");
CREATE INDEX "appointment_workspace_id_start_at_id" ON "appointment" ("workspace_id", "start_at", "id");
CREATE INDEX "appointment_workspace_id_created_at_id" ON "appointment" ("workspace_id", "created_at", "id");
CREATE INDEX "appointment_agent_id_start_at" ON "appointment" ("agent_id", "start_at");

CREATE TABLE "appointment_reminder" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "appointment_id" TEXT NOT NULL,
    "offset_minutes" BIGINT NOT NULL,
    "start_at" TIMESTAMP NOT NULL,
    "outcome" TEXT NOT NULL,
    "reason" TEXT,
    "message_id" TEXT,
    "created_at" TIMESTAMP NOT NULL,
    FOREIGN KEY ("appointment_id") REFERENCES "appointment" ("id") ON DELETE CASCADE,
    FOREIGN KEY ("message_id") REFERENCES "message" ("id") ON DELETE SET NULL
);
CREATE UNIQUE INDEX "appointment_reminder_appointment_id_offset_minutes_start_at"
    ON "appointment_reminder" ("appointment_id", "offset_minutes", "start_at");
