"""Issue 20 benchmark: the interactions query and the pipeline summary at scale.

Builds one SQLite file with the real migrations: 100,000 conversations with
10 messages each (1,000,000 messages, interleaved in time across
conversations, the last one inbound in a third of them), on 4 channels, a
third each open, handoff and closed, 20,000 of their contacts leads; and
100,000 opportunities on 6 pipeline columns in 3 currencies. Rows are bulk
inserted into the service's schema and indexes.

Then, through the whole HTTP stack (Flask test client: key, scope, parsing,
service, serialisation), p50 of
- GET /v1/interactions with three filters (channel, status, unread), and
  with three others (channel, status, last activity since); for reference,
  channel and status with a text search that matches no message (q: every
  message of those conversations is read);
- GET /v1/pipeline/summary;
next to, in the same run, the baselines: the bare Flask endpoint of
bench/bare_app.py through its test client, GET /v1/me (the stack with no
query), each query's own SQL run straight on sqlite3, and, for the summary,
the GROUP BY over every opportunity that the totals kept by triggers replace.

Targets: interactions p50 < 50 ms; summary p50 < 100 ms.

    .venv/bin/python bench/crm.py [--requests 200] [--keep DIR]
"""

import argparse
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))
sys.path.insert(0, str(ROOT / "bench"))

from bare_app import app as bare_app  # noqa: E402

from agent_platform import create_app  # noqa: E402
from agent_platform.db import database, init_database  # noqa: E402
from agent_platform.migrate import apply_migrations  # noqa: E402
from agent_platform.models import Channel  # noqa: E402
from agent_platform.services import keys  # noqa: E402

CONVERSATIONS = 100_000
PER_CONVERSATION = 10
OPPORTUNITIES = 100_000
LEADS = 20_000
CHANNELS = 4
CHUNK = 50_000
START = datetime(2025, 1, 1)
MESSAGE_COLUMNS = (
    "id, created_at, updated_at, conversation_id, channel_id, contact_id, direction, "
    "sender_type, type, text, external_id, status, metadata, edit_history, send_attempts"
)
COLUMNS = (("New", 10, "open"), ("Call", 25, "open"), ("Proposal", 60, "open"),
           ("Negotiation", 80, "open"), ("Won", 100, "won"), ("Lost", 0, "lost"))  # fmt: skip
CURRENCIES = ("EUR", "USD", "BRL")


def build(directory):
    path = Path(directory) / "bench_crm.db"
    reuse = path.exists()
    app = create_app(
        {"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING", "RATE_LIMIT_REQUESTS": 10**9}
    )
    with app.app_context():
        if not reuse:
            apply_migrations()
            workspace_id = keys.create_workspace("Bench").id
            channels = [
                Channel.create(workspace=workspace_id, name=f"WA {n}", type="whatsapp").id
                for n in range(CHANNELS)
            ]
            started = time.perf_counter()
            _fill(workspace_id, channels)
            database.execute_sql("ANALYZE")
            print(f"built in {time.perf_counter() - started:.0f} s: {path}")
        workspace_id = Channel.get().workspace_id
        channels = [c.id for c in Channel.select().order_by(Channel.name)]
        _, raw_key = keys.create_key(workspace_id, "bench", keys.all_scopes())
        database.close()
    return app, raw_key, workspace_id, channels, path


def _fill(workspace_id, channels):
    connection = database.connection()
    contacts, conversations = [], []
    for number in range(CONVERSATIONS):
        contact_id, conversation_id = str(uuid.uuid4()), str(uuid.uuid4())
        first = START + timedelta(seconds=number)
        last = first + timedelta(seconds=CONVERSATIONS * (PER_CONVERSATION - 1))
        contacts.append((contact_id, first, first, workspace_id, f"C {number}",
                         f"+55119{number:08d}", "{}"))  # fmt: skip
        status = ("open", "handoff", "closed")[number % 3]
        channel_id = channels[number % CHANNELS]
        conversations.append((conversation_id, first, last, workspace_id, contact_id,
                              channel_id, status, last, PER_CONVERSATION))  # fmt: skip
    with database.atomic():
        connection.executemany(
            "INSERT INTO contact (id, created_at, updated_at, workspace_id, name, phone, "
            "custom_fields) VALUES (?, ?, ?, ?, ?, ?, ?)",
            contacts,
        )
        connection.executemany(
            "INSERT INTO conversation (id, created_at, updated_at, workspace_id, contact_id, "
            "channel_id, status, last_message_at, message_count) VALUES (?,?,?,?,?,?,?,?,?)",
            conversations,
        )
    _messages(connection, conversations)
    _leads(connection, workspace_id, contacts)
    _opportunities(connection, workspace_id)


def _messages(connection, conversations):
    batch = []
    for index in range(PER_CONVERSATION):
        for number, row in enumerate(conversations):
            conversation_id, contact_id, channel_id = row[0], row[4], row[5]
            # The last message is the contact's in every third conversation (unread).
            last = index == PER_CONVERSATION - 1
            inbound = (number % 3 == 0) if last else index % 2 == 0
            moment = START + timedelta(seconds=CONVERSATIONS * index + number)
            batch.append((str(uuid.uuid4()), moment, moment, conversation_id, channel_id,
                          contact_id, "inbound" if inbound else "outbound",
                          "contact" if inbound else "agent", "text",
                          f"message {index} of {number}: where is my order?",
                          f"wamid.{number}.{index}", "received" if inbound else "read",
                          "{}", "[]", 0))  # fmt: skip
            if len(batch) >= CHUNK:
                _insert(connection, "message", MESSAGE_COLUMNS, batch)
    _insert(connection, "message", MESSAGE_COLUMNS, batch)


def _insert(connection, table, columns, batch):
    marks = ", ".join("?" * len(columns.split(",")))
    with database.atomic():
        connection.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", batch)
    batch.clear()


def _leads(connection, workspace_id, contacts):
    columns = (
        "id, created_at, updated_at, workspace_id, contact_id, status, source, notes, score, "
        "score_reasons, adjustment, facts"
    )
    statuses = ("new", "contacted", "qualified", "unqualified")
    rows = [(str(uuid.uuid4()), c[1], c[1], workspace_id, c[0], statuses[n % 4], "whatsapp", "",
             n % 101, "[]", 0, "{}") for n, c in enumerate(contacts[:LEADS])]  # fmt: skip
    _insert(connection, "lead", columns, rows)


def _opportunities(connection, workspace_id):
    column_ids = []
    for position, (name, probability, kind) in enumerate(COLUMNS):
        column_id = str(uuid.uuid4())
        column_ids.append((column_id, kind))
        row = [(column_id, START, START, workspace_id, name, position, probability, kind)]
        _insert(connection, "pipeline_column",
                "id, created_at, updated_at, workspace_id, name, position, probability, kind",
                row)  # fmt: skip
    columns = (
        "id, created_at, updated_at, workspace_id, title, value_minor, currency, column_id, status"
    )
    rng, batch = random.Random(20), []
    for number in range(OPPORTUNITIES):
        column_id, kind = column_ids[number % len(column_ids)]
        moment = START + timedelta(minutes=number)
        value = rng.randrange(1, 10**9)
        batch.append((str(uuid.uuid4()), moment, moment, workspace_id, f"Deal {number}",
                      value, CURRENCIES[number % 3], column_id, kind))  # fmt: skip
        if len(batch) >= CHUNK:
            _insert(connection, "opportunity", columns, batch)
    _insert(connection, "opportunity", columns, batch)


def p50(client, path, headers, count, warmup=5):
    times = []
    for number in range(warmup + count):
        started = time.perf_counter()
        response = client.get(path, headers=headers)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, response.get_data(as_text=True)
        if number >= warmup:
            times.append(elapsed)
    return statistics.median(times) * 1000


def sql_p50(path, statements, count):
    """p50 of running `statements` ((sql, params), ...) straight on sqlite3."""
    connection = sqlite3.connect(path)
    times = []
    for number in range(5 + count):
        started = time.perf_counter()
        for sql, params in statements:
            connection.execute(sql, params).fetchall()
        if number >= 5:
            times.append(time.perf_counter() - started)
    connection.close()
    return statistics.median(times) * 1000


def interactions_sql(workspace_id, channel_id):
    """The page and the count the service runs for ?channel_id&status=open&unread=true."""
    where = (
        "WHERE workspace_id = ? AND channel_id = ? AND status = 'open' "
        "AND last_direction = 'inbound'"
    )
    params = (workspace_id, channel_id)
    return (
        (f"SELECT * FROM conversation {where} ORDER BY updated_at DESC, id DESC LIMIT 20", params),
        (f"SELECT count(*) FROM conversation {where}", params),
    )


def summary_sql(workspace_id):
    sql = (
        'SELECT "column_id", "currency", "opportunities", "value_high", "value_low" '
        'FROM "pipeline_total" WHERE "workspace_id" = ? AND "opportunities" > 0'
    )
    return ((sql, (workspace_id,)),)


def summary_by_scan_sql(workspace_id):
    """What the totals the triggers keep replace: every opportunity summed."""
    sql = (
        'SELECT "column_id", "currency", count(*), sum("value_minor") FROM "opportunity" '
        'WHERE "workspace_id" = ? GROUP BY "column_id", "currency"'
    )
    return ((sql, (workspace_id,)),)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--keep", help="build into (or reuse the file in) this directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        app, raw_key, workspace_id, channels, path = build(args.keep or scratch)
        init_database(str(path))
        client, headers = app.test_client(), {"x-api-key": raw_key}
        since = (START + timedelta(seconds=CONVERSATIONS * 9 + CONVERSATIONS // 2)).isoformat()
        n = args.requests
        three = f"/v1/interactions?channel_id={channels[0]}&status=open&unread=true"
        other = f"/v1/interactions?channel_id={channels[1]}&status=handoff&active_from={since}Z"
        text = f"/v1/interactions?channel_id={channels[2]}&status=open&q=refund"
        rows = [
            ("bare Flask endpoint (test client)", p50(bare_app.test_client(), "/", {}, n)),
            ("GET /v1/me", p50(client, "/v1/me", headers, n)),
            ("SQL of the 3-filter query (page + count)",
             sql_p50(path, interactions_sql(workspace_id, channels[0]), n)),
            ("GET " + three.replace(channels[0], "{c}"), p50(client, three, headers, n)),
            ("GET " + other.replace(channels[1], "{c}"), p50(client, other, headers, n)),
            ("GET " + text.replace(channels[2], "{c}") + " (text search, for reference)",
             p50(client, text, headers, max(10, n // 10))),
            ("SQL of the summary: the kept totals", sql_p50(path, summary_sql(workspace_id), n)),
            ("SQL of a summary by scanning the opportunities (for comparison)",
             sql_p50(path, summary_by_scan_sql(workspace_id), n)),
            ("GET /v1/pipeline/summary", p50(client, "/v1/pipeline/summary", headers, n)),
        ]  # fmt: skip
        total = client.get(three, headers=headers).get_json()["pagination"]["total"]
        database.close_all()
    print(f"\n{CONVERSATIONS * PER_CONVERSATION:,} messages in {CONVERSATIONS:,} conversations, "
          f"{OPPORTUNITIES:,} opportunities; p50 of {n} requests each")  # fmt: skip
    for name, value in rows:
        print(f"{name:<92} {value:8.2f} ms")
    print(f"(the 3-filter query matches {total:,} conversations)")
    targets = {three: 50, "/v1/pipeline/summary": 100}
    for name, value in rows:
        for path, limit in targets.items():
            if name == "GET " + path.replace(channels[0], "{c}"):
                print(
                    f"{path.split('?')[0]}: {'met' if value < limit else 'NOT met'} (< {limit} ms)"
                )


if __name__ == "__main__":
    main()
