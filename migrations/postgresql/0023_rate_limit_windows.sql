-- Rate-limit windows kept in the database (services/rate_limits.py): every
-- process serving this database counts every request. One row per limiter
-- and key: the Unix times of the requests in its window, and when the
-- newest leaves it (pruned after).

CREATE TABLE "rate_limit_window" (
    "limiter" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "hits" TEXT NOT NULL,
    "expires_at" DOUBLE PRECISION NOT NULL,
    PRIMARY KEY ("limiter", "key")
);
CREATE INDEX "rate_limit_window_expires_at" ON "rate_limit_window" ("expires_at");
