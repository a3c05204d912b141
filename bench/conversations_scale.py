"""Issue 4 benchmark: conversation and message listings do not slow down as the
tables grow, and receive_inbound keeps up with a busy channel.

Builds two SQLite files with the real migrations: a small one (10,000 messages
in 100 conversations) and a large one (1,000,000 messages in 10,000
conversations), each conversation holding 100 messages, the messages
interleaved in time across conversations as real traffic is. The rows are bulk
inserted (executemany in big transactions) into the schema and indexes the
service uses. Then, through the whole HTTP stack of the app (Flask test client:
key check, rate limit, scope, parsing, service, serialisation), with the two
files measured in alternating blocks so other load on the machine weighs on
both alike:

- p50 of GET /v1/conversations/{id}/messages?limit=50 (oldest first, and the
  latest page with order=desc) on random conversations;
- p50 of GET /v1/conversations?limit=20 (all, status=open) and /v1/chats;

and prints each large/small ratio (target <= 2). Then receive_inbound
sustained messages/s on the large file (target >= 500), durability on (WAL +
synchronous=NORMAL, the service's own setting), one transaction per message,
a new sender every fifth message; the share of events.emit(); and, for
reference, the rate with synchronous=FULL (an fsync per commit).

    .venv/bin/python bench/conversations_scale.py [--requests 400] [--inbound 2000]
        [--rounds 5] [--keep DIR]   # --keep: build once into DIR, reuse afterwards
"""

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "platform"))

from agent_platform import create_app  # noqa: E402
from agent_platform.channels import InboundMessage  # noqa: E402
from agent_platform.db import database, init_database  # noqa: E402
from agent_platform.migrate import apply_migrations  # noqa: E402
from agent_platform.models import Channel  # noqa: E402
from agent_platform.services import inbound, keys  # noqa: E402

PER_CONVERSATION = 100
CHUNK = 50_000
START = datetime(2025, 1, 1)

MESSAGE_COLUMNS = (
    "id, created_at, updated_at, conversation_id, channel_id, contact_id, direction, "
    "sender_type, type, text, external_id, status, metadata, edit_history, send_attempts"
)


def build(directory, conversations):
    """A migrated database with `conversations` x PER_CONVERSATION messages
    (reused when `directory` already holds it, see --keep)."""
    path = Path(directory) / f"bench_{conversations}.db"
    reuse = path.exists()
    app = create_app(
        {"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING", "RATE_LIMIT_REQUESTS": 10**9}
    )
    if reuse:
        return _reused(app, path)
    with app.app_context():
        apply_migrations()
        workspace_id = keys.create_workspace("Bench").id
        _, raw_key = keys.create_key(workspace_id, "bench", keys.all_scopes())
        channel = Channel.create(workspace=workspace_id, name="WhatsApp", type="whatsapp")
        started = time.perf_counter()
        conversation_ids = _bulk_insert(workspace_id, channel.id, conversations)
        database.execute_sql("ANALYZE")
        seconds = time.perf_counter() - started
        total = conversations * PER_CONVERSATION
        print(
            f"built {total:>9,} messages in {conversations:>6,} conversations "
            f"in {seconds:5.1f} s ({total / seconds:,.0f} rows/s)"
        )
        database.close()
    return app, raw_key, conversation_ids, channel.id


def _reused(app, path):
    from agent_platform.models import ApiKey, Conversation

    with app.app_context():
        workspace_id = Channel.get().workspace_id
        ApiKey.delete().execute()
        _, raw_key = keys.create_key(workspace_id, "bench", keys.all_scopes())
        ids = [
            row.id
            for row in Conversation.select(Conversation.id).where(
                Conversation.workspace == workspace_id,
                Conversation.message_count == PER_CONVERSATION,
            )
        ]
        channel_id = Channel.get().id
        database.close()
    print(f"reusing {path} ({len(ids):,} conversations)")
    return app, raw_key, ids, channel_id


def _bulk_insert(workspace_id, channel_id, conversations):
    """Contacts and conversations, then the messages interleaved in time across
    conversations (as real traffic arrives), so a conversation's page is spread
    over the table instead of sitting in a few neighbouring pages."""
    connection = database.connection()
    ids = [(str(uuid.uuid4()), str(uuid.uuid4())) for _ in range(conversations)]
    span = timedelta(seconds=conversations)  # one message per conversation per span

    def at(number, index):
        return START + span * index + timedelta(seconds=number)

    contacts, rows = [], []
    for number, (contact_id, conversation_id) in enumerate(ids):
        first, last = at(number, 0), at(number, PER_CONVERSATION - 1)
        status = ("open", "handoff", "closed")[number % 3]
        contacts.append(
            (
                contact_id,
                first,
                first,
                workspace_id,
                f"Contact {number}",
                f"+55119{number:08d}",
                "{}",
            )
        )
        rows.append(
            (
                conversation_id,
                first,
                last,
                workspace_id,
                contact_id,
                channel_id,
                status,
                last,
                PER_CONVERSATION,
            )
        )
    with database.atomic():
        connection.executemany(
            "INSERT INTO contact (id, created_at, updated_at, workspace_id, name, phone, "
            "custom_fields) VALUES (?, ?, ?, ?, ?, ?, ?)",
            contacts,
        )
        connection.executemany(
            "INSERT INTO conversation (id, created_at, updated_at, workspace_id, contact_id, "
            "channel_id, status, last_message_at, message_count) VALUES (?,?,?,?,?,?,?,?,?)",
            rows,
        )
    batch = []
    for index in range(PER_CONVERSATION):
        inbound = index % 2 == 0
        for number, (contact_id, conversation_id) in enumerate(ids):
            moment = at(number, index)
            batch.append(
                (
                    str(uuid.uuid4()),
                    moment,
                    moment,
                    conversation_id,
                    channel_id,
                    contact_id,
                    "inbound" if inbound else "outbound",
                    "contact" if inbound else "agent",
                    "text",
                    f"message {index} of conversation {number}: where is my order?",
                    f"wamid.{number}.{index}",
                    "received" if inbound else "read",
                    "{}",
                    "[]",
                    0,
                )
            )
            if len(batch) >= CHUNK:
                _insert_messages(connection, batch)
    _insert_messages(connection, batch)
    return [conversation_id for _, conversation_id in ids]


def _insert_messages(connection, batch):
    with database.atomic():
        connection.executemany(
            f"INSERT INTO message ({MESSAGE_COLUMNS}) VALUES ({', '.join('?' * 15)})", batch
        )
    batch.clear()


URLS = {
    "conversations/{id}/messages?limit=50": "/v1/conversations/{id}/messages?limit=50",
    "conversations/{id}/messages?limit=50&order=desc": (
        "/v1/conversations/{id}/messages?limit=50&order=desc"
    ),
    "conversations?limit=20": "/v1/conversations?limit=20",
    "conversations?limit=20&status=open": "/v1/conversations?limit=20&status=open",
    "chats?limit=20": "/v1/chats?limit=20",
}


def measure_lists(sets, count, block=25, warmup=5):
    """p50 in ms per URL and per set. The sets are measured in alternating
    blocks of `block` requests, so whatever else loads the machine weighs on
    both alike; the first requests after each switch (re-opening the file)
    are not timed."""
    timings = {label: {name: [] for name in URLS} for label in sets}
    rng = random.Random(4)
    for round_number in range(max(1, count // block)):
        order = list(sets) if round_number % 2 == 0 else list(reversed(list(sets)))
        for label in order:
            app, raw_key, conversation_ids = sets[label]
            init_database(app.config["DATABASE_PATH"])
            client = app.test_client()
            headers = {"x-api-key": raw_key}
            for name, template in URLS.items():
                for number in range(warmup + block):
                    path = template.format(id=rng.choice(conversation_ids))
                    started = time.perf_counter()
                    response = client.get(path, headers=headers)
                    elapsed = time.perf_counter() - started
                    assert response.status_code == 200, response.get_data(as_text=True)
                    if number >= warmup:
                        timings[label][name].append(elapsed)
            database.close_all()
    return {
        label: {name: statistics.median(values) * 1000 for name, values in by_name.items()}
        for label, by_name in timings.items()
    }


def measure_inbound(app, channel_id, count, synchronous):
    """receive_inbound messages/s: every fifth message comes from a new sender
    (a new contact and conversation), the others from senders writing again."""
    run = uuid.uuid4().hex[:8]  # ids never seen before, also with --keep
    first_number = random.randrange(10**9, 9 * 10**9)
    init_database(app.config["DATABASE_PATH"])
    with app.app_context():
        database.connect(reuse_if_open=True)
        database.execute_sql(f"PRAGMA synchronous = {synchronous}")
        channel = Channel.get_by_id(channel_id)
        started = time.perf_counter()
        for number in range(count):
            sender = f"55{first_number + number // 5}"
            message = InboundMessage(
                external_id=f"wamid.{run}.{number}",
                sender_id=sender,
                sender_phone="+" + sender,
                sender_name=f"Sender {sender}",
                text=f"inbound message {number}",
            )
            inbound.receive_inbound(channel, message)
        seconds = time.perf_counter() - started
        database.execute_sql("PRAGMA synchronous = NORMAL")
        database.close()
    return count / seconds


def measure_emit(app, channel_id, count):
    """What one emit() costs (events outbox + webhook fan-out) inside a
    transaction, the commit not included: its share of receive_inbound."""
    from agent_platform.db import transaction
    from agent_platform.events import emit

    init_database(app.config["DATABASE_PATH"])
    with app.app_context():
        workspace_id = Channel.get_by_id(channel_id).workspace_id
        with transaction() as txn:
            started = time.perf_counter()
            for number in range(count):
                emit(workspace_id, "message.received", {"id": str(number), "text": "x"})
            seconds = time.perf_counter() - started
            txn.rollback()  # leave the file as it was
        database.close()
    return seconds / count * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="requests per measured URL")
    parser.add_argument("--inbound", type=int, default=2000, help="messages per inbound round")
    parser.add_argument("--large", type=int, default=10_000, help="conversations in the large set")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of receive_inbound")
    parser.add_argument("--keep", help="build into (or reuse the files in) this directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        directory = args.keep or scratch
        small_app, small_key, small_ids, _ = build(directory, 100)
        large_app, large_key, large_ids, channel_id = build(directory, args.large)
        sets = {
            "small": (small_app, small_key, small_ids),
            "large": (large_app, large_key, large_ids),
        }
        p50s = measure_lists(sets, args.requests)
        sizes = [f"{n * PER_CONVERSATION:,} msgs" for n in (100, args.large)]
        print()
        print(f"p50 through the HTTP stack ({args.requests} requests each, alternating blocks)")
        print(f"{'GET /v1/...':<52} {sizes[0]:>13} {sizes[1]:>15} {'ratio':>6}")
        for name in URLS:
            small, large = p50s["small"][name], p50s["large"][name]
            ratio = large / small
            flag = "ok" if ratio <= 2 else "OVER 2x"
            print(f"{name:<52} {small:10.2f} ms {large:12.2f} ms {ratio:5.2f}x {flag}")
        print()
        rates = [
            measure_inbound(large_app, channel_id, args.inbound, "NORMAL")
            for _ in range(args.rounds)
        ]
        rate = statistics.median(rates)
        print(
            f"receive_inbound on the large file, WAL + synchronous=NORMAL (the service's "
            f"setting), one transaction per message: median {rate:,.0f} msg/s over "
            f"{args.rounds} rounds of {args.inbound} "
            f"({', '.join(f'{r:,.0f}' for r in rates)}) {'ok' if rate >= 500 else 'BELOW 500'}"
        )
        emit_ms = measure_emit(large_app, channel_id, 1000)
        # Each new sender (one message in five) raises contact.created and
        # conversation.created as well as message.received.
        emits = 1 + 2 / 5
        own = 1000 / rate - emits * emit_ms
        print(
            f"  per message: {1000 / rate:.2f} ms = events.emit() {emit_ms:.2f} ms x {emits} "
            f"events + {own:.2f} ms for the rest"
        )
        full = measure_inbound(large_app, channel_id, args.inbound, "FULL")
        print(f"receive_inbound with synchronous=FULL (fsync per commit): {full:,.0f} msg/s")


if __name__ == "__main__":
    main()
