-- A rate limit's window (models/rate_limits.py) holds 64 slices of the
-- window, each "number:count:last hit" (oldest first), instead of the time
-- of every hit: a hit costs the same whatever the rate, where a key allowed
-- thousands a second rewrote thousands of times under its row's lock at
-- each request. A slice leaves when its last hit does (strict: never more
-- than the limit in any window). Windows last one window's length: those
-- in the old form are forgotten, as a restart forgets the ones in memory.
DELETE FROM "rate_limit_window";

-- One hit, counted in one statement, as migration 0026's: the key's row is
-- every server's turn for that key, held from the upsert that locks it to
-- the commit. Returns whether this hit was counted (there was room), how
-- many the window holds now, when its oldest slice's last hit was, and the
-- database's now. `p_alone`: the statement is a transaction of its own,
-- whose COMMIT then need not wait for the disk (a crash may forget the last
-- fraction of a second's hits; nothing else is written in it).
CREATE OR REPLACE FUNCTION "rate_limit_hit"(p_limiter TEXT, p_key TEXT, p_limit INT,
                                            p_window FLOAT8, p_alone BOOLEAN)
RETURNS TABLE ("allowed" BOOLEAN, "counted" INT, "oldest" FLOAT8, "now" FLOAT8)
LANGUAGE plpgsql AS $$
DECLARE
    at FLOAT8 := extract(epoch FROM clock_timestamp());
    here BIGINT := floor(at / (p_window / 64));
    stored TEXT;
    piece TEXT;
    kept TEXT[] := '{}';
    newest TEXT;
    held INT := 0;
    room BOOLEAN;
BEGIN
    IF p_alone THEN
        PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    INSERT INTO "rate_limit_window" ("limiter", "key", "hits", "expires_at")
    VALUES (p_limiter, p_key, '', 0)
    ON CONFLICT ("limiter", "key") DO UPDATE SET "hits" = "rate_limit_window"."hits"
    RETURNING "rate_limit_window"."hits" INTO stored;
    FOREACH piece IN ARRAY string_to_array(stored, ' ') LOOP
        IF split_part(piece, ':', 3)::FLOAT8 > at - p_window THEN
            kept := kept || piece;
            held := held + split_part(piece, ':', 2)::INT;
        END IF;
    END LOOP;
    room := held < p_limit;
    IF room THEN
        held := held + 1;
        newest := kept[cardinality(kept)];
        IF newest IS NOT NULL AND split_part(newest, ':', 1)::BIGINT >= here THEN
            kept[cardinality(kept)] := split_part(newest, ':', 1) || ':'
                || (split_part(newest, ':', 2)::INT + 1)::TEXT || ':'
                || greatest(split_part(newest, ':', 3)::FLOAT8, at)::TEXT;
        ELSE
            kept := kept || (here::TEXT || ':1:' || at::TEXT);
        END IF;
    END IF;
    -- Refused, the newest hit is the one the row's expires_at was set for.
    UPDATE "rate_limit_window"
    SET "hits" = array_to_string(kept, ' '),
        "expires_at" = CASE WHEN room THEN at + p_window ELSE "expires_at" END
    WHERE "limiter" = p_limiter AND "key" = p_key;
    RETURN QUERY SELECT room, held, split_part(kept[1], ':', 3)::FLOAT8, at;
END;
$$;
