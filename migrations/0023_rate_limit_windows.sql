-- Rate-limit windows kept in the database (services/rate_limits.py), used
-- when several processes serve one database (PostgreSQL): each counts every
-- process's requests. One row per limiter and key: the Unix times of the
-- requests in its window, and when the newest leaves it (pruned after).

CREATE TABLE "rate_limit_window" (
    "limiter" VARCHAR(40) NOT NULL,
    "key" TEXT NOT NULL,
    "hits" TEXT NOT NULL,
    "expires_at" REAL NOT NULL,
    PRIMARY KEY ("limiter", "key")
);
CREATE INDEX "rate_limit_window_expires_at" ON "rate_limit_window" ("expires_at");
