-- Counters that every server writes (issue 42).
--
-- The metrics tallies of migration 0022 were one row per workspace and key,
-- which every stored message (and every delivery, send error and reply)
-- updated, so the transactions of several servers took turns on it until
-- their commits, and deadlocked with the locks they held already (an
-- identity's, ContactIdentity.hold). Each tally is now spread over slots: a
-- transaction writes the rows of a slot that it holds alone (tally_slot), so
-- writers never wait for each other there, and readers add the slots up
-- (models/metrics.py).

-- The slot this transaction writes tallies in: the first free one from its
-- backend's own (one try each, never waiting), held to the end of the
-- transaction by an advisory lock that no other transaction can then take.
-- Only when every slot is some other transaction's (more than 64 writing at
-- once) does it wait for its own.
CREATE FUNCTION "tally_slot"() RETURNS INT LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    first INT := mod(pg_backend_pid(), 64);
BEGIN
    FOR step IN 0..63 LOOP
        IF pg_try_advisory_xact_lock(hashtext('tally'), mod(first + step, 64)) THEN
            RETURN mod(first + step, 64);
        END IF;
    END LOOP;
    PERFORM pg_advisory_xact_lock(hashtext('tally'), first);
    RETURN first;
END;
$$;

ALTER TABLE "message_tally" ADD COLUMN "slot" INT NOT NULL DEFAULT 0;
ALTER TABLE "message_tally" DROP CONSTRAINT "message_tally_pkey",
    ADD PRIMARY KEY ("workspace_id", "channel_type", "direction", "status", "slot");
ALTER TABLE "send_error_tally" ADD COLUMN "slot" INT NOT NULL DEFAULT 0;
ALTER TABLE "send_error_tally" DROP CONSTRAINT "send_error_tally_pkey",
    ADD PRIMARY KEY ("workspace_id", "channel_type", "slot");
ALTER TABLE "delivery_tally" ADD COLUMN "slot" INT NOT NULL DEFAULT 0;
ALTER TABLE "delivery_tally" DROP CONSTRAINT "delivery_tally_pkey",
    ADD PRIMARY KEY ("workspace_id", "counted", "outcome", "slot");
ALTER TABLE "reply_latency_tally" ADD COLUMN "slot" INT NOT NULL DEFAULT 0;
ALTER TABLE "reply_latency_tally" DROP CONSTRAINT "reply_latency_tally_pkey",
    ADD PRIMARY KEY ("workspace_id", "le", "slot");

-- The triggers' functions of migration 0022, each writing its slot.
CREATE OR REPLACE FUNCTION "message_tally_count"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "message_tally" ("workspace_id", "channel_type", "direction", "status", "slot",
                                 "messages")
    SELECT c."workspace_id",
           coalesce((SELECT "type" FROM "channel" WHERE "id" = NEW."channel_id"), 'none'),
           NEW."direction", NEW."status", "tally_slot"(), 1
    FROM "conversation" c WHERE c."id" = NEW."conversation_id"
    ON CONFLICT ("workspace_id", "channel_type", "direction", "status", "slot")
    DO UPDATE SET "messages" = "message_tally"."messages" + 1;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION "delivery_tally_attempt"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "slot", "times")
    SELECT w."workspace_id", 'attempt', CASE WHEN NEW."success" THEN 'success' ELSE 'failure' END,
           "tally_slot"(), 1
    FROM "delivery" d JOIN "webhook" w ON w."id" = d."webhook_id"
    WHERE d."id" = NEW."delivery_id"
    ON CONFLICT ("workspace_id", "counted", "outcome", "slot")
    DO UPDATE SET "times" = "delivery_tally"."times" + 1;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION "delivery_tally_finished"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "delivery_tally" ("workspace_id", "counted", "outcome", "slot", "times")
    SELECT w."workspace_id", 'delivery', NEW."status", "tally_slot"(), 1
    FROM "webhook" w WHERE w."id" = NEW."webhook_id"
    ON CONFLICT ("workspace_id", "counted", "outcome", "slot")
    DO UPDATE SET "times" = "delivery_tally"."times" + 1;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION "reply_latency_tally_sent"() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO "reply_latency_tally" ("workspace_id", "le", "slot", "replies", "seconds")
    SELECT "workspace_id",
           CASE WHEN "latency" <= 1 THEN '1' WHEN "latency" <= 2 THEN '2'
                WHEN "latency" <= 5 THEN '5' WHEN "latency" <= 10 THEN '10'
                WHEN "latency" <= 30 THEN '30' WHEN "latency" <= 60 THEN '60'
                WHEN "latency" <= 120 THEN '120' WHEN "latency" <= 300 THEN '300'
                ELSE '+Inf' END,
           "tally_slot"(), 1, "latency"
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
    ON CONFLICT ("workspace_id", "le", "slot")
    DO UPDATE SET "replies" = "reply_latency_tally"."replies" + 1,
                  "seconds" = "reply_latency_tally"."seconds" + excluded."seconds";
    RETURN NULL;
END;
$$;

-- One hit of a rate limit (models/rate_limits.py), counted in one statement:
-- the key's row is every server's turn for that key, held from the upsert
-- that locks it to the commit, so the window is read, pruned and written
-- back here, in one round trip, instead of in the server between three
-- (where the turn also waited for whatever else that process was running).
-- The same window as the server keeps (hits: Unix times, oldest first,
-- separated by spaces), without reading it whole: the hits that have left
-- it are the first ones, a few at each hit (dropped one by one; after a
-- pause, when more have left, the window is read whole once). Returns
-- whether this hit was counted (there was room), how many the window holds
-- now and the oldest of them, and the database's now. `p_alone`: the
-- statement is a transaction of its own, whose COMMIT then need not wait
-- for the disk either (a crash may forget the last fraction of a second's
-- hits, which lets as many requests more through; nothing else is written
-- in it).
CREATE FUNCTION "rate_limit_hit"(p_limiter TEXT, p_key TEXT, p_limit INT, p_window FLOAT8,
                                 p_alone BOOLEAN)
RETURNS TABLE ("allowed" BOOLEAN, "counted" INT, "oldest" FLOAT8, "now" FLOAT8)
LANGUAGE plpgsql AS $$
DECLARE
    at FLOAT8 := extract(epoch FROM clock_timestamp());
    stored TEXT;
    space INT;
    dropped INT := 0;
    held INT;
    room BOOLEAN;
BEGIN
    IF p_alone THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    INSERT INTO "rate_limit_window" ("limiter", "key", "hits", "expires_at")
    VALUES (p_limiter, p_key, '', 0)
    ON CONFLICT ("limiter", "key") DO UPDATE SET "hits" = "rate_limit_window"."hits"
    RETURNING "rate_limit_window"."hits" INTO stored;
    WHILE stored <> '' AND split_part(stored, ' ', 1)::FLOAT8 <= at - p_window LOOP
        IF dropped = 8 THEN
            stored := array_to_string(ARRAY(
                SELECT "hit"
                FROM unnest(string_to_array(stored, ' ')) WITH ORDINALITY AS t("hit", "place")
                WHERE "hit"::FLOAT8 > at - p_window
                ORDER BY "place"
            ), ' ');
            EXIT;
        END IF;
        space := position(' ' IN stored);
        stored := CASE WHEN space = 0 THEN '' ELSE substr(stored, space + 1) END;
        dropped := dropped + 1;
    END LOOP;
    held := CASE WHEN stored = '' THEN 0
                 ELSE octet_length(stored) - octet_length(replace(stored, ' ', '')) + 1 END;
    room := held < p_limit;
    IF room THEN
        stored := ltrim(stored || ' ' || at::TEXT);
        held := held + 1;
    END IF;
    -- Refused, the newest hit is the one the row's expires_at was set for.
    UPDATE "rate_limit_window"
    SET "hits" = stored,
        "expires_at" = CASE WHEN room THEN at + p_window ELSE "expires_at" END
    WHERE "limiter" = p_limiter AND "key" = p_key;
    RETURN QUERY SELECT room, held, split_part(stored, ' ', 1)::FLOAT8, at;
END;
$$;
