-- A webhook's own due deliveries in send order (events/claims.py,
-- claim_next): a lane that has sent its batch claims the next one of the
-- same webhook, reading only that webhook's pending rows instead of every
-- webhook's due ones. The id is the tie-break of the send order here.
CREATE INDEX "delivery_webhook_id_status_next_attempt_at"
    ON "delivery" ("webhook_id", "status", "next_attempt_at", "id");
