-- A request's key and its rate-limit hit in one statement
-- (services/keys.py authenticate_counted): the key looked up by its lookup
-- id and, only when the hash it was given is the key's and the key is not
-- revoked, one hit counted against its root's window by migration 0027's
-- rate_limit_hit. Two round trips to the server before every view were one
-- third of an authenticated request's cost. The key's row comes back
-- whatever the hash (none when no key has the lookup id), with no hit when
-- nothing was counted: the service still compares the hash itself, and a
-- key that does not match counts nothing against the key it names.
CREATE OR REPLACE FUNCTION "api_key_admitted"(p_lookup_id TEXT, p_key_hash TEXT,
                                              p_limiter TEXT, p_limit INT,
                                              p_window FLOAT8, p_alone BOOLEAN)
RETURNS TABLE ("api_key" "api_key", "hit_allowed" BOOLEAN, "hit_counted" INT,
               "hit_oldest" FLOAT8, "hit_now" FLOAT8)
LANGUAGE plpgsql AS $$
DECLARE
    found_key "api_key";
    hit RECORD;
BEGIN
    SELECT * INTO found_key FROM "api_key" AS k WHERE k."lookup_id" = p_lookup_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF found_key."key_hash" = p_key_hash AND found_key."revoked_at" IS NULL THEN
        SELECT * INTO hit FROM "rate_limit_hit"(
            p_limiter, coalesce(found_key."root_id", found_key."id"), p_limit, p_window, p_alone);
        RETURN QUERY SELECT found_key, hit."allowed", hit."counted", hit."oldest", hit."now";
    ELSE
        RETURN QUERY SELECT found_key, NULL::BOOLEAN, NULL::INT, NULL::FLOAT8, NULL::FLOAT8;
    END IF;
END;
$$;
