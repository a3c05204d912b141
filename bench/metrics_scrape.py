"""Issue 41: what one /metrics scrape costs on a large database.

bench/inbox_seed.py builds one workspace of 100,000 conversations and
1,000,000 messages through the migrations (the tallies' triggers run as
they do for the service); then a scrape's figures are read for that
workspace (what GET /metrics answers a key) and for every workspace (the
operator's view, with the database's size), each timed over many rounds.
Some messages are left queued and some deliveries due first, so the queue
counts have rows to count. The query plans are printed: each count must
read an index of what waits, never the message table.

    .venv/bin/python bench/metrics_scrape.py [--database /tmp/metrics-bench.db] [--rounds 50]

Target: a scrape in a few milliseconds, whatever the number of messages.
"""

import argparse
import statistics
import time
from pathlib import Path

from inbox_seed import seed

from agent_platform import create_app
from agent_platform.db import database
from agent_platform.models import metrics as figures
from agent_platform.models.base import utcnow
from agent_platform.services import metrics

QUEUED, DUE = 500, 200


def wait_in_queues(workspace_id):
    """Queued messages and due deliveries, as a busy moment leaves them."""
    database.execute_sql(
        'UPDATE "message" SET "status" = \'queued\' WHERE "id" IN (SELECT "id" FROM "message"'
        " WHERE \"direction\" = 'outbound' LIMIT ?)",
        (QUEUED,),
    )
    now = utcnow()
    webhook = "bench-webhook"
    database.execute_sql(
        'INSERT INTO "webhook" ("id", "created_at", "updated_at", "workspace_id", "url", "events",'
        ' "description", "is_active", "status", "secret", "consecutive_failures")'
        " VALUES (?, ?, ?, ?, 'https://example.com/hook', '[\"*\"]', '', 1, 'active', 's', 0)",
        (webhook, now, now, workspace_id),
    )
    for number in range(DUE):
        database.execute_sql(
            'INSERT INTO "delivery" ("id", "created_at", "updated_at", "webhook_id", "event_id",'
            ' "event", "body", "status", "attempt_count", "round_start", "next_attempt_at")'
            " VALUES (?, ?, ?, ?, ?, 'message.received', '{}', 'pending', 0, 0, ?)",
            (f"bench-delivery-{number}", now, now, webhook, f"bench-event-{number}", now),
        )


def timed(workspace_id, rounds):
    spent = []
    for _ in range(rounds):
        started = time.perf_counter()
        body, _ = metrics.exposition(workspace_id)
        spent.append((time.perf_counter() - started) * 1000)
    return statistics.median(spent), max(spent), body


def plans(workspace_id):
    for name in ("messages_to_send", "replies_pending", "handoffs_waiting"):
        print(f"  {name}: {_plan(getattr(figures, name), workspace_id)}")
    print(f"  deliveries_due: {_plan(figures.deliveries_due, workspace_id, utcnow())}")


def _plan(function, *arguments):
    """EXPLAIN QUERY PLAN of the statement `function` runs (sqlite3's trace
    callback hands it over with its parameters in place)."""
    statements, connection = [], database.connection()
    connection.set_trace_callback(statements.append)
    try:
        function(*arguments)
    finally:
        connection.set_trace_callback(None)
    rows = database.execute_sql("EXPLAIN QUERY PLAN " + statements[-1])
    return " / ".join(row[-1] for row in rows)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--database", default="/tmp/metrics-bench.db")
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--messages", type=int, default=1_000_000)
    options = parser.parse_args()
    path = Path(options.database)
    if path.exists():
        path.unlink()
    started = time.perf_counter()
    seeded = seed(path, conversations=options.messages // 10, messages=options.messages)
    print(f"seeded {options.messages:,} messages in {time.perf_counter() - started:.0f} s")
    app = create_app({"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING"})
    with app.app_context():
        wait_in_queues(seeded.workspace_id)
        print("query plans:")
        plans(seeded.workspace_id)
        for label, workspace_id in (("one workspace", seeded.workspace_id), ("every one", None)):
            median, worst, body = timed(workspace_id, options.rounds)
            print(f"scrape, {label}: median {median:.2f} ms, max {worst:.2f} ms, {len(body)} bytes")
        print(body.decode())


if __name__ == "__main__":
    main()
