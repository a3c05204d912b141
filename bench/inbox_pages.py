"""The inbox's pages over HTTP at 100,000 conversations and 1,000,000 messages.

bench/inbox_seed.py builds the database (or --keep reuses one it built);
a person of the workspace is made (admin, with a password) and given the
conversations the seed assigned to its first user, and their read marks.
`agent-platform serve` then serves that database as a self-hoster runs it,
the benchmark signs in through the sign-in form as a browser does, and
times, one request at a time on one kept-alive connection, each page a
person opens: the list (first page, each state, a channel, an agent,
searches for a rare, a common and a very common word and for a first
name, a later page by its "older" link) and conversation pages (sampled
across the database). In the same run the bare baseline,
bench/bare_page_app.py (a list and a thread of the same size rendered from
memory by Jinja), under the same server (bench/bare_server.py).

    .venv/bin/python bench/inbox_pages.py [--samples 200] [--keep DIR]
"""

import argparse
import json
import random
import re
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import requests
from inbox_seed import Seeded, seed
from loadgen import Service, bare_flask, free_port

from agent_platform import create_app
from agent_platform.db import database
from agent_platform.models import Conversation

EMAIL, PASSWORD = "bench@example.com", "a long bench password"
OLDER = re.compile(r'href="(/app\?[^"]*cursor=[^"]+)"')


def seeded_database(keep):
    """(path, Seeded): built afresh, or the one --keep holds."""
    directory = Path(keep or tempfile.mkdtemp(prefix="inbox-pages-"))
    directory.mkdir(parents=True, exist_ok=True)
    path, ids = directory / "inbox.db", directory / "seeded.json"
    if path.exists() and ids.exists():
        return path, Seeded(**json.loads(ids.read_text()))
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    seeded = seed(path)
    print(f"seeded in {time.perf_counter() - started:.0f} s")
    ids.write_text(json.dumps(asdict(seeded)))
    return path, seeded


def make_person(path, seeded):
    """An admin who holds what the seed gave its first user; their id."""
    from agent_platform.services import users

    app = create_app({"DATABASE_PATH": str(path), "LOG_LEVEL": "WARNING"})
    with app.app_context():
        person = users.all_users(seeded.workspace_id)
        if not person:
            values = {"email": EMAIL, "name": "Bench", "role": "admin", "password": PASSWORD}
            person = [users.create_user(seeded.workspace_id, values)]
        user_id = person[0].id
        Conversation.update(assigned_to=user_id).where(
            Conversation.assigned_to == seeded.user_id
        ).execute()
        database.execute_sql(
            "UPDATE conversation_reads SET user_id = ? WHERE user_id = ?",
            (user_id, seeded.user_id),
        )
        database.close()
    return user_id


def signed_in(base, email=EMAIL):
    """A session signed in through the form, as a browser does."""
    session = requests.Session()
    form = session.get(base + "/app/sign-in", timeout=10).text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    answer = session.post(
        base + "/app/sign-in",
        data={"csrf_token": token, "email": email, "password": PASSWORD},
        timeout=10,
    )
    answer.raise_for_status()
    return session


def pages(seeded, session, base, rng):
    """Page name -> a function giving the next path to GET."""
    lists = {
        "list, first page": "/app",
        "list, needs a human": "/app?state=needs_human",
        "list, handled by the agent": "/app?state=agent",
        "list, assigned to me": "/app?state=mine",
        "list, closed": "/app?state=closed",
        "list, one channel": f"/app?channel={seeded.channel_ids[0]}",
        "list, one agent": f"/app?agent={seeded.agent_ids[1]}",
        "search, a rare word": f"/app?q={seeded.words['rare']}",
        "search, a common word": f"/app?q={seeded.words['some']}",
        "search, a very common word": f"/app?q={seeded.words['many']}",
        "search, a first name": f"/app?q={seeded.name}",
        "list, page 5 by its link": later_page(session, base, 5),
    }
    named = {name: (lambda path=path: path) for name, path in lists.items()}
    ids = seeded.conversation_ids
    named["a conversation"] = lambda: f"/app/conversations/{rng.choice(ids)}"
    return named


def later_page(session, base, number):
    path = "/app"
    for _ in range(number - 1):
        path = OLDER.search(session.get(base + path, timeout=10).text).group(1)
    return path.replace("&amp;", "&")


def timed(session, base, next_path, samples):
    """(p50, p95) in ms of `samples` GETs, after one not counted."""
    session.get(base + next_path(), timeout=30).raise_for_status()
    spent = []
    for _ in range(samples):
        started = time.perf_counter()
        answer = session.get(base + next_path(), timeout=30)
        spent.append((time.perf_counter() - started) * 1000)
        answer.raise_for_status()
    return statistics.median(spent), statistics.quantiles(spent, n=20)[-1]


def bare_figures(samples):
    port = free_port()
    process = bare_flask("bare_page_app:app", port)
    try:
        base, session = f"http://127.0.0.1:{port}", requests.Session()
        return {
            "bare: a list of 30 rows": timed(session, base, lambda: "/", samples),
            "bare: a thread of 50 messages": timed(session, base, lambda: "/c", samples),
        }
    finally:
        process.terminate()
        process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--keep", help="build into this directory, or reuse what it holds")
    args = parser.parse_args()
    path, seeded = seeded_database(args.keep)
    make_person(path, seeded)
    service = Service({"AGENT_PLATFORM_DATABASE_PATH": str(path)}).start()
    try:
        session = signed_in(service.base)
        named = pages(seeded, session, service.base, random.Random(1))
        figures = {
            name: timed(session, service.base, path, args.samples) for name, path in named.items()
        }
    finally:
        service.cleanup()
    figures.update(bare_figures(args.samples))
    print(f"\n{'page':<34} {'p50 ms':>8} {'p95 ms':>8}   ({args.samples} requests each)")
    for name, (p50, p95) in figures.items():
        print(f"{name:<34} {p50:8.1f} {p95:8.1f}")


if __name__ == "__main__":
    main()
