"""Issue 39's figures for the inbox's queries: with 100,000 conversations and
1,000,000 messages in one workspace (bench/inbox_seed.py), the list (first
page, each filter, a search, a later page by cursor), the counts and a
conversation's view, each timed over many samples through the service
functions the pages call (services/inbox.py), p50 and p95 in ms. Target:
each well under 150 ms.

With --plans it prints SQLite's query plan of every statement one call of
each variant runs (no statement may scan the message table).

    .venv/bin/python bench/inbox.py [--samples 200] [--keep DIR] [--plans]
        [--conversations 100000 --messages 1000000]
"""

import argparse
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from inbox_seed import seed  # noqa: E402

from agent_platform import create_app  # noqa: E402
from agent_platform.db import database  # noqa: E402
from agent_platform.services import inbox  # noqa: E402


def variants(seeded, rng):
    """name -> a call of the service, drawing its samples from `rng`."""
    ws, user = seeded.workspace_id, seeded.user_id
    later = _cursor_of_page(ws, user, 20)

    def listing(**filters):
        return lambda: inbox.inbox_list(ws, user, **filters)

    return {
        "list, first page": listing(),
        "list, needs_human": listing(state="needs_human"),
        "list, agent": listing(state="agent"),
        "list, mine": listing(state="mine"),
        "list, closed": listing(state="closed"),
        "list, one channel": lambda: inbox.inbox_list(
            ws, user, channel_id=rng.choice(seeded.channel_ids)
        ),
        "list, one agent, needs_human": lambda: inbox.inbox_list(
            ws, user, state="needs_human", agent_id=rng.choice(seeded.agent_ids)
        ),
        "list, page 21 by cursor": listing(cursor=later),
        f"search, rare word ({seeded.words['rare']})": listing(search=seeded.words["rare"]),
        f"search, some ({seeded.words['some']})": listing(search=seeded.words["some"]),
        f"search, many ({seeded.words['many']})": listing(search=seeded.words["many"]),
        f"search, contact name ({seeded.name})": listing(search=seeded.name),
        "counts": lambda: inbox.inbox_counts(ws, user),
        "conversation view": lambda: inbox.conversation_view(
            ws, user, rng.choice(seeded.conversation_ids)
        ),
        "mark_read": lambda: inbox.mark_read(ws, user, rng.choice(seeded.conversation_ids)),
    }


def _cursor_of_page(ws, user, pages):
    cursor = None
    for _ in range(pages):
        cursor = inbox.inbox_list(ws, user, cursor=cursor)["next_cursor"]
    return cursor


def timed(call, samples):
    """p50 and p95 of `call` in ms (after a warm-up call)."""
    call()
    spent = []
    for _ in range(samples):
        started = time.perf_counter()
        call()
        spent.append((time.perf_counter() - started) * 1000)
        database.close()  # each call on a connection from the pool, as a request's
    cuts = statistics.quantiles(spent, n=20)
    return statistics.median(spent), cuts[18]


LITERAL = re.compile(r"'[^']*'")
SCANS_MESSAGES = re.compile(r"^SCAN (message|m)\b")


def plans(path, calls):
    """The query plan of each statement the calls run, and whether any scans messages."""
    statements = []
    connection = database.connection()
    connection.set_trace_callback(statements.append)
    for call in calls.values():
        call()
    connection.set_trace_callback(None)
    reader = sqlite3.connect(path)
    scans, shown = [], set()
    for sql in (s for s in statements if s.lstrip().upper().startswith("SELECT")):
        plan = [row[3] for row in reader.execute(f"EXPLAIN QUERY PLAN {sql}")]
        scans += [line for line in plan if SCANS_MESSAGES.match(line)]
        shape = LITERAL.sub("?", " ".join(sql.split()))
        if shape not in shown:
            shown.add(shape)
            print("\n" + shape[:400], *(f"    {line}" for line in plan), sep="\n")
    reader.close()
    return scans


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--conversations", type=int, default=100_000)
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--keep", help="build into this directory (a fresh one each run)")
    parser.add_argument("--plans", action="store_true")
    args = parser.parse_args()
    directory = Path(args.keep or tempfile.mkdtemp(prefix="inbox-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "inbox.db"
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    seeded = seed(path, args.conversations, args.messages)
    print(
        f"seeded {args.conversations:,} conversations, {args.messages:,} messages "
        f"in {time.perf_counter() - started:.0f} s ({path}, "
        f"{path.stat().st_size / 1e6:.0f} MB)"
    )
    app = create_app({"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING"})
    with app.app_context():
        calls = variants(seeded, random.Random(1))
        if args.plans:
            scans = plans(str(path), calls)
            print(f"\nstatements scanning message: {len(scans)}")
        print(f"\n{'query':<42} {'p50 ms':>8} {'p95 ms':>8}   ({args.samples} samples each)")
        for name, call in calls.items():
            p50, p95 = timed(call, args.samples)
            print(f"{name:<42} {p50:8.2f} {p95:8.2f}")
        database.close_all()


if __name__ == "__main__":
    main()
