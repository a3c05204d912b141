-- Jobs that run once per interval across every process serving one database
-- (several servers and workers on PostgreSQL): when each is next due, and
-- until when the process running it holds it (models/jobs.py).

CREATE TABLE "job_turn" (
    "name" VARCHAR(200) NOT NULL PRIMARY KEY,
    "due_at" DATETIME NOT NULL,
    "held_until" DATETIME
);
