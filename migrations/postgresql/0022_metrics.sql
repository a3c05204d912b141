-- What /metrics reads (issue 41): tallies that triggers keep inside the
-- statements that change the rows, so every process (serve, worker, the
-- CLI) counts, the figures survive restarts, and a scrape reads a handful
-- of rows instead of counting the message table. Tallies only ever grow
-- (Prometheus counters): deleting rows takes nothing off.

-- (The SQLite migration gave keys that held every scope metrics:read: no
-- PostgreSQL database predates this one.)

-- Messages per workspace, channel type, direction and status, counted once
-- when stored and once more on each change of status (an outbound message
-- counts under queued, then sent, then delivered...). 'none': no channel.
CREATE TABLE "message_tally" (
    "workspace_id" TEXT NOT NULL,
    "channel_type" TEXT NOT NULL,
    "direction" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "messages" BIGINT NOT NULL,
    PRIMARY KEY ("workspace_id", "channel_type", "direction", "status"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);

-- Messages stored before this migration, under the status they have now.
INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "messages")
SELECT c."workspace_id", coalesce(ch."type", 'none'), m."direction", m."status", count(*)
FROM "message" m
JOIN "conversation" c ON c."id" = m."conversation_id"
LEFT JOIN "channel" ch ON ch."id" = m."channel_id"
GROUP BY 1, 2, 3, 4;

CREATE FUNCTION "message_tally_count"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "messages")
    SELECT c."workspace_id",
           coalesce((SELECT "type" FROM "channel" WHERE "id" = NEW."channel_id"), 'none'),
           NEW."direction", NEW."status", 1
    FROM "conversation" c WHERE c."id" = NEW."conversation_id"
    ON CONFLICT ("workspace_id", "channel_type", "direction", "status")
    DO UPDATE SET "messages" = "message_tally"."messages" + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "message_tally_insert" AFTER INSERT ON "message"
    FOR EACH ROW EXECUTE FUNCTION "message_tally_count"();
CREATE TRIGGER "message_tally_status" AFTER UPDATE OF "status" ON "message"
    FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status")
    EXECUTE FUNCTION "message_tally_count"();

-- Attempts to send an outbound message that failed (the network refused it,
-- could not be reached, or no sender could take it), each retry included,
-- per workspace and channel type: counted by the send job itself
-- (services/sending.py), in the transaction that records the failure.
CREATE TABLE "send_error_tally" (
    "workspace_id" TEXT NOT NULL,
    "channel_type" TEXT NOT NULL,
    "errors" BIGINT NOT NULL,
    PRIMARY KEY ("workspace_id", "channel_type"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);

-- Webhook deliveries per workspace: each attempt by result ('success',
-- 'failure'), and each delivery that finished ('succeeded', 'failed').
CREATE TABLE "delivery_tally" (
    "workspace_id" TEXT NOT NULL,
    "counted" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "times" BIGINT NOT NULL,
    PRIMARY KEY ("workspace_id", "counted", "outcome"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);

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

CREATE FUNCTION "delivery_tally_attempt"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
    SELECT w."workspace_id", 'attempt', CASE WHEN NEW."success" THEN 'success' ELSE 'failure' END, 1
    FROM "delivery" d JOIN "webhook" w ON w."id" = d."webhook_id"
    WHERE d."id" = NEW."delivery_id"
    ON CONFLICT ("workspace_id", "counted", "outcome")
    DO UPDATE SET "times" = "delivery_tally"."times" + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "delivery_tally_attempt" AFTER INSERT ON "delivery_attempt"
    FOR EACH ROW EXECUTE FUNCTION "delivery_tally_attempt"();

CREATE FUNCTION "delivery_tally_finished"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "times")
    SELECT w."workspace_id", 'delivery', NEW."status", 1
    FROM "webhook" w WHERE w."id" = NEW."webhook_id"
    ON CONFLICT ("workspace_id", "counted", "outcome")
    DO UPDATE SET "times" = "delivery_tally"."times" + 1;
    RETURN NULL;
END;
$$;
CREATE TRIGGER "delivery_tally_finished" AFTER UPDATE OF "status" ON "delivery"
    FOR EACH ROW WHEN (OLD."status" IS DISTINCT FROM NEW."status"
                       AND NEW."status" IN ('succeeded', 'failed'))
    EXECUTE FUNCTION "delivery_tally_finished"();

-- The agent's replies per workspace in latency buckets: from the customer's
-- message being stored to the first message of the reply being sent (the
-- reply's messages carry their job's id; the job names the message it
-- answers). "le" is the bucket's upper bound as /metrics shows it; each
-- reply is in one bucket (/metrics adds them up), with the sum of seconds.
CREATE TABLE "reply_latency_tally" (
    "workspace_id" TEXT NOT NULL,
    "le" TEXT NOT NULL,
    "replies" BIGINT NOT NULL,
    "seconds" DOUBLE PRECISION NOT NULL,
    PRIMARY KEY ("workspace_id", "le"),
    FOREIGN KEY ("workspace_id") REFERENCES "workspace" ("id") ON DELETE CASCADE
);

-- A JSON document's text member, NULL when the document does not parse
-- (as SQLite's json_valid guards json_extract).
CREATE FUNCTION "json_text_member"(document TEXT, member TEXT) RETURNS TEXT
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN document::jsonb ->> member;
EXCEPTION WHEN others THEN
    RETURN NULL;
END;
$$;

CREATE FUNCTION "reply_latency_tally_sent"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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
               greatest(0.0, extract(epoch FROM NEW."sent_at" - m."created_at"))::float8
                   AS "latency",
               m."created_at" AS "asked_at"
        FROM "reply_job" j JOIN "message" m ON m."id" = j."message_id"
        WHERE j."id" = "json_text_member"(NEW."metadata", 'reply_job_id')
    ) AS "reply"
    -- Only the reply's first message sent: a reply in parts is one reply.
    WHERE NOT EXISTS (
        SELECT 1 FROM "message" o
        WHERE o."conversation_id" = NEW."conversation_id" AND o."created_at" >= "reply"."asked_at"
          AND o."id" <> NEW."id" AND o."sent_at" IS NOT NULL
          AND "json_text_member"(o."metadata", 'reply_job_id') = "reply"."job_id"
    )
    ON CONFLICT ("workspace_id", "le")
    DO UPDATE SET "replies" = "reply_latency_tally"."replies" + 1,
                  "seconds" = "reply_latency_tally"."seconds" + excluded."seconds";
    RETURN NULL;
END;
$$;
CREATE TRIGGER "reply_latency_tally_sent" AFTER UPDATE OF "status" ON "message"
    FOR EACH ROW WHEN (OLD."status" = 'queued' AND NEW."status" = 'sent'
                       AND NEW."direction" = 'outbound')
    EXECUTE FUNCTION "reply_latency_tally_sent"();
