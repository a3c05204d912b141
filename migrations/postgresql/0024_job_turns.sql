-- Jobs that run once per interval across every process serving this
-- database: when each is next due, and until when the process running it
-- holds it (models/jobs.py).

CREATE TABLE "job_turn" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "due_at" TIMESTAMP NOT NULL,
    "held_until" TIMESTAMP
);
