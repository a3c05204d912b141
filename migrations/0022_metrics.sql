-- What /metrics reads (issue 41): tallies that triggers keep inside the
-- statements that change the rows, so every process (serve, worker, the
-- CLI) counts, the figures survive restarts, and a scrape reads a handful
-- of rows instead of counting the message table. Tallies only ever grow
-- (Prometheus counters): deleting rows takes nothing off.

-- Keys that held every scope (the first admin key, `keys create --scopes all`)
-- were meant to hold all of them: they gain metrics:read (as in 0016).
UPDATE "api_key"
SET "scopes" = (
    SELECT json_group_array("value") FROM (
        SELECT "value" FROM json_each("api_key"."scopes")
        UNION SELECT 'metrics:read'
        ORDER BY 1
    )
)
WHERE (
    SELECT count(DISTINCT "value") FROM json_each("api_key"."scopes") WHERE "value" IN (
    'agents:read', 'agents:write', 'agents:delete', 'trainings:read',
    'trainings:write', 'channels:read', 'channels:write', 'contacts:read',
    'contacts:write', 'conversations:read', 'messages:read', 'messages:write',
    'messages:delete', 'chats:write', 'custom-fields:read', 'custom-fields:write',
    'mcp:read', 'mcp:write', 'webhooks:read', 'webhooks:write', 'webhooks:delete',
    'leads:read', 'leads:write', 'pipeline:read', 'pipeline:write',
    'interactions:read', 'interactions:write', 'intentions:read', 'intentions:write',
    'idle-actions:read', 'idle-actions:write', 'transfer-rules:read',
    'transfer-rules:write', 'appointments:read', 'appointments:write',
    'permissions:read', 'permissions:write', 'users:read', 'users:write'
    )
) = 39;

-- Messages per workspace, channel type, direction and status, counted once
-- when stored and once more on each change of status (an outbound message
-- counts under queued, then sent, then delivered...). 'none': no channel.
CREATE TABLE "message_tally" (
    "workspace_id" VARCHAR(36) NOT NULL,
    "channel_type" VARCHAR(20) NOT NULL,
    "direction" VARCHAR(10) NOT NULL,
    "status" VARCHAR(20) NOT NULL,
    "messages" INTEGER NOT NULL,
    PRIMARY KEY ("workspace_id", "channel_type", "direction", "status"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
) WITHOUT ROWID;

-- Messages stored before this migration, under the status they have now.
INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "messages")
SELECT c."workspace_id", coalesce(ch."type", 'none'), m."direction", m."status", count(*)
FROM "message" m
JOIN "conversation" c ON c."id" = m."conversation_id"
LEFT JOIN "channel" ch ON ch."id" = m."channel_id"
GROUP BY 1, 2, 3, 4;

CREATE TRIGGER "message_tally_insert" AFTER INSERT ON "message" BEGIN
    INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "messages")
    SELECT c."workspace_id",
           coalesce((SELECT "type" FROM "channel" WHERE "id" = NEW."channel_id"), 'none'),
           NEW."direction", NEW."status", 1
    FROM "conversation" c WHERE c."id" = NEW."conversation_id"
    ON CONFLICT ("workspace_id", "channel_type", "direction", "status")
    DO UPDATE SET "messages" = "messages" + 1;
END;

CREATE TRIGGER "message_tally_status" AFTER UPDATE OF "status" ON "message"
WHEN OLD."status" IS NOT NEW."status"
BEGIN
    INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "messages")
    SELECT c."workspace_id",
           coalesce((SELECT "type" FROM "channel" WHERE "id" = NEW."channel_id"), 'none'),
           NEW."direction", NEW."status", 1
    FROM "conversation" c WHERE c."id" = NEW."conversation_id"
    ON CONFLICT ("workspace_id", "channel_type", "direction", "status")
    DO UPDATE SET "messages" = "messages" + 1;
END;

-- Attempts to send an outbound message that failed (the network refused it,
-- could not be reached, or no sender could take it), each retry included,
-- per workspace and channel type: counted by the send job itself
-- (services/sending.py), in the transaction that records the failure.
CREATE TABLE "send_error_tally" (
    "workspace_id" VARCHAR(36) NOT NULL,
    "channel_type" VARCHAR(20) NOT NULL,
    "errors" INTEGER NOT NULL,
    PRIMARY KEY ("workspace_id", "channel_type"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
) WITHOUT ROWID;

-- Webhook deliveries per workspace: each attempt by result ('success',
-- 'failure'), and each delivery that finished ('succeeded', 'failed').
CREATE TABLE "delivery_tally" (
    "workspace_id" VARCHAR(36) NOT NULL,
    "counted" VARCHAR(10) NOT NULL,
    "outcome" VARCHAR(20) NOT NULL,
    "times" INTEGER NOT NULL,
    PRIMARY KEY ("workspace_id", "counted", "outcome"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
) WITHOUT ROWID;

INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
SELECT w."workspace_id", 'attempt', CASE WHEN a."success" THEN 'success' ELSE 'failure' END,
       count(*)
FROM "delivery_attempt" a
JOIN "delivery" d ON d."id" = a."delivery_id"
JOIN "webhook" w ON w."id" = d."webhook_id"
GROUP BY 1, 2, 3;

INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
SELECT w."workspace_id", 'delivery', d."status", count(*)
FROM "delivery" d
JOIN "webhook" w ON w."id" = d."webhook_id"
WHERE d."status" IN ('succeeded', 'failed')
GROUP BY 1, 2, 3;

CREATE TRIGGER "delivery_tally_attempt" AFTER INSERT ON "delivery_attempt" BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
    SELECT w."workspace_id", 'attempt', CASE WHEN NEW."success" THEN 'success' ELSE 'failure' END, 1
    FROM "delivery" d JOIN "webhook" w ON w."id" = d."webhook_id"
    WHERE d."id" = NEW."delivery_id"
    ON CONFLICT ("workspace_id", "counted", "outcome") DO UPDATE SET "times" = "times" + 1;
END;

CREATE TRIGGER "delivery_tally_finished" AFTER UPDATE OF "status" ON "delivery"
WHEN OLD."status" IS NOT NEW."status" AND NEW."status" IN ('succeeded', 'failed')
BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
    SELECT w."workspace_id", 'delivery', NEW."status", 1
    FROM "webhook" w WHERE w."id" = NEW."webhook_id"
    ON CONFLICT ("workspace_id", "counted", "outcome") DO UPDATE SET "times" = "times" + 1;
END;

-- The agent's replies per workspace in latency buckets: from the customer's
-- message being stored to the first message of the reply being sent (the
-- reply's messages carry their job's id; the job names the message it
-- answers). "le" is the bucket's upper bound as /metrics shows it; each
-- reply is in one bucket (/metrics adds them up), with the sum of seconds.
CREATE TABLE "reply_latency_tally" (
    "workspace_id" VARCHAR(36) NOT NULL,
    "le" VARCHAR(10) NOT NULL,
    "replies" INTEGER NOT NULL,
    "seconds" REAL NOT NULL,
    PRIMARY KEY ("workspace_id", "le"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
) WITHOUT ROWID;

CREATE TRIGGER "reply_latency_tally_sent" AFTER UPDATE OF "status" ON "message"
WHEN OLD."status" = 'queued' AND NEW."status" = 'sent' AND NEW."direction" = 'outbound'
BEGIN
    INSERT INTO "reply_latency_tally" ("workspace_id", "le", "replies", "seconds")
    SELECT "workspace_id",
           CASE WHEN "latency" <= 1 THEN '1' WHEN "latency" <= 2 THEN '2'
                WHEN "latency" <= 5 THEN '5' WHEN "latency" <= 10 THEN '10'
                WHEN "latency" <= 30 THEN '30' WHEN "latency" <= 60 THEN '60'
                WHEN "latency" <= 120 THEN '120' WHEN "latency" <= 300 THEN '300'
                ELSE '+Inf' END,
           1, "latency"
    FROM (
        SELECT j."workspace_id" AS "workspace_id", j."id" AS "job_id",
               max(0.0, (julianday(NEW."sent_at") - julianday(m."created_at")) * 86400.0)
                   AS "latency",
               m."created_at" AS "asked_at"
        FROM "reply_job" j JOIN "message" m ON m."id" = j."message_id"
        WHERE j."id" = CASE WHEN json_valid(NEW."metadata")
                            THEN json_extract(NEW."metadata", '$.reply_job_id') END
    ) AS "reply"
    -- Only the reply's first message sent: a reply in parts is one reply.
    WHERE NOT EXISTS (
        SELECT 1 FROM "message" o
        WHERE o."conversation_id" = NEW."conversation_id" AND o."created_at" >= "reply"."asked_at"
          AND o."id" <> NEW."id" AND o."sent_at" IS NOT NULL
          AND CASE WHEN json_valid(o."metadata")
                   THEN json_extract(o."metadata", '$.reply_job_id') END = "reply"."job_id"
    )
    ON CONFLICT ("workspace_id", "le")
    DO UPDATE SET "replies" = "replies" + 1, "seconds" = "seconds" + excluded."seconds";
END;
