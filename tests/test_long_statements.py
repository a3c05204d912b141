"""serve's worker runs SQLite's long statements on a native thread of their
own (agent_platform.long_statements): a search that reads
every message of a workspace, a training's text indexed. The event loop
serves the other greenlets meanwhile (1.3 s held at 1,000,000 messages
before: docs/benchmarks.md)."""

import time

import pytest

from agent_platform import db, long_statements
from agent_platform.gevent_worker import OneThread
from agent_platform.models import fastsql
from agent_platform.models.pagination import PageRequest
from agent_platform.services import contacts, conversations, interactions, trainings
from conversations_helpers import send, setup_chat
from loop_helpers import ticks_beside

pytestmark = pytest.mark.sqlite_only(
    reason="a PostgreSQL statement waits on its socket, which yields"
)

# About half a second of SQLite's own work, whatever the data.
COUNTING = (
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 3000000) "
    "SELECT count(*), sum(x) FROM n"
)
PAGE = PageRequest(page=1, limit=20, order="desc", sort="updated_at")


@pytest.fixture
def long_in_thread(app):
    long_statements.run_in(OneThread().run)
    yield
    long_statements.run_in(None)


def ticks_while(work):
    """(work's result, how often another greenlet woke while it worked)."""

    def timed():
        began = time.monotonic()
        return work(), began, time.monotonic()

    (result, began, ended), ticks = ticks_beside(timed)
    return result, sum(began < tick < ended for tick in ticks)


def counted_through_peewee():
    with long_statements.long_statements():
        return db.database.execute_sql(COUNTING).fetchone()


def counted_through_fastsql():
    with long_statements.long_statements():
        return fastsql.execute(COUNTING).fetchall()


@pytest.mark.parametrize("count", [counted_through_peewee, counted_through_fastsql])
def test_other_greenlets_run_while_a_long_statement_works(app, long_in_thread, count):
    with app.app_context():
        result, ticks = ticks_while(count)
    assert tuple(result if isinstance(result, tuple) else result[0]) == (3000000, 4500001500000)
    assert ticks >= 10


def test_without_it_the_statement_holds_every_greenlet(app):
    """The control: the same statement run in place wakes nothing meanwhile."""
    with app.app_context():
        result, ticks = ticks_while(counted_through_peewee)
    assert tuple(result) == (3000000, 4500001500000) and ticks == 0


def ids(found):
    items = found if isinstance(found, list) else found.items  # a page, or previews
    return [item["id"] if isinstance(item, dict) else item.id for item in items]


def test_searches_reading_every_message_or_contact_go_to_that_thread(app, caller):
    chat = setup_chat(caller)
    for text in ("where is my order", "thanks", "order 42 arrived"):
        send(caller, chat["conversation"]["id"], text=text)
    training = {"type": "text", "content": "We open at nine."}
    caller.post(f"/v1/agents/{chat['agent_id']}/trainings", json=training)
    ran = []

    def recorded(function, *args):
        ran.append(args[1])
        return function(*args)

    workspace = caller.workspace_id
    searches = {
        "conversations": lambda: conversations.list_conversations(workspace, PAGE, q="order"),
        "interactions": lambda: interactions.query_interactions(workspace, PAGE, q="order"),
        "contacts": lambda: contacts.list_contacts(workspace, PAGE, q="Bia"),
        "knowledge page": lambda: trainings.previews(workspace, chat["agent_id"], 100, 1000),
    }
    with app.app_context():
        found = {name: ids(search()) for name, search in searches.items()}
        long_statements.run_in(recorded)
        try:
            again = {name: ids(search()) for name, search in searches.items()}
        finally:
            long_statements.run_in(None)
    assert found == again and found["conversations"] == [chat["conversation"]["id"]]
    assert found["contacts"] == [chat["contact"]["id"]] and len(found["knowledge page"]) == 1
    assert sum('"message"' in sql and "LIKE" in sql for sql in ran) == 2  # both message scans
    assert any('"contact"' in sql and "LIKE" in sql for sql in ran)
    assert any('FROM "training"' in sql and "SUBSTR" in sql for sql in ran)
    with app.app_context():  # a list without a search stays on the loop
        ran.clear()
        long_statements.run_in(recorded)
        try:
            conversations.list_conversations(workspace, PAGE)
        finally:
            long_statements.run_in(None)
    assert ran == []
