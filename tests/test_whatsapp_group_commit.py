"""POSTs arriving together share one transaction (group commit): all are
stored, each answer waits for the COMMIT of its own work, a failing unit
fails alone, a failing COMMIT fails them all."""

import threading

import pytest
from peewee import IntegrityError

from agent_platform.channels.whatsapp.intake import GroupCommit
from agent_platform.db import database
from agent_platform.models import ChannelEvent, Message
from agent_platform.models.fastsql import execute
from conftest import ON_POSTGRESQL
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import messages_payload, post, text


def test_concurrent_posts_are_all_stored(app, channel):
    answers, errors = [], []

    def customer(number):
        client = app.test_client()
        for n in range(15):
            wamid = f"wamid.{number}.{n}"
            payload = messages_payload(
                text(f"msg {n}", wamid=wamid, sender=f"55119000000{number:02d}")
            )
            try:
                answers.append(post(client, channel["id"], payload).status_code)
            except Exception as error:  # pragma: no cover - reported below
                errors.append(error)

    threads = [threading.Thread(target=customer, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert answers == [200] * 120
    assert Message.select().count() == 120


def run_in_threads(group, works, holds=None):
    results = [None] * len(works)
    holds = holds or [()] * len(works)

    def submit(index, work):
        try:
            results[index] = ("ok", group.run(work, holds[index]))
        except Exception as error:
            results[index] = ("error", error)
        finally:
            if not database.is_closed():
                database.close()

    threads = [threading.Thread(target=submit, args=(i, w)) for i, w in enumerate(works)]
    return threads, results


def run_behind_a_held_leader(group, later, holds=None):
    """Submit the units `later` (naming `holds`, if given) to `group` while a
    first unit holds the lead, so that they queue and are then run together
    by one leader. Returns each outcome, the first unit's then theirs:
    ("ok", value) or ("error", exception)."""
    entered, release = threading.Event(), threading.Event()

    def first():
        entered.set()
        release.wait(5)
        return "first"

    threads, results = run_in_threads(group, [first, *later], holds and [(), *holds])
    threads[0].start()
    assert entered.wait(5)
    for thread in threads[1:]:
        thread.start()
    while len(group._pending) < len(later):  # the others are queued behind the leader
        threading.Event().wait(0.01)
    release.set()
    for thread in threads:
        thread.join(10)
    return results


def test_waiting_units_run_together_on_the_leaders_thread(app):
    group = GroupCommit()
    seen = []

    def later(n):
        def work():
            seen.append((n, threading.get_ident(), database.in_transaction()))
            return n

        return work

    results = run_behind_a_held_leader(group, [later(n) for n in range(5)])
    assert results == [("ok", "first")] + [("ok", n) for n in range(5)]
    assert sorted(n for n, _, _ in seen) == list(range(5))
    assert len({ident for _, ident, _ in seen}) == 1  # one leader ran the whole batch
    assert all(in_transaction for _, _, in_transaction in seen)


def test_a_batch_takes_the_locks_its_units_name_before_any_of_them_runs(app):
    # One lock at a time, unit by unit, two servers' batches could each hold
    # one the other waits for (a deadlock on PostgreSQL).
    seen = []
    group = GroupCommit(hold=lambda names: seen.append(("held", sorted(names))))

    def later(n):
        def work():
            seen.append(("ran", n))
            return n

        return work

    results = run_behind_a_held_leader(group, [later(1), later(2)], holds=[["b", "a"], ["c"]])
    assert results == [("ok", "first"), ("ok", 1), ("ok", 2)]
    assert seen == [("held", []), ("held", ["a", "b", "c"]), ("ran", 1), ("ran", 2)]


def test_a_failing_unit_fails_alone(app, channel):
    group = GroupCommit()

    def broken():
        raise RuntimeError("this unit fails")

    def writes():
        ChannelEvent.record(channel["id"], "written", {})
        return "written"

    results = run_behind_a_held_leader(group, [broken, writes])
    assert results[0] == ("ok", "first")
    assert results[1][0] == "error" and "this unit fails" in str(results[1][1])
    assert results[2] == ("ok", "written")
    assert [event.kind for event in ChannelEvent.select()] == ["written"]


# Each engine's way to check the channel events' foreign key at COMMIT, for
# this transaction only (PostgreSQL's DDL is undone with it).
DEFER_FOREIGN_KEYS = (
    'ALTER TABLE "channel_event" ALTER CONSTRAINT "channel_event_channel_id_fkey" '
    "DEFERRABLE INITIALLY DEFERRED"
    if ON_POSTGRESQL
    else "PRAGMA defer_foreign_keys = ON"
)


def test_a_failing_commit_fails_every_unit_of_the_batch(app, channel):
    group = GroupCommit()

    def poison():
        # A foreign key checked at COMMIT: the whole transaction is refused.
        execute(DEFER_FOREIGN_KEYS)
        ChannelEvent.record("no-such-channel", "x", {})
        return "poisoned"

    def innocent():
        ChannelEvent.record(channel["id"], "innocent", {})
        return "innocent"

    results = run_behind_a_held_leader(group, [poison, innocent])
    assert results[0] == ("ok", "first")  # its own batch, committed before the others came
    assert [outcome for outcome, _ in results[1:]] == ["error", "error"]
    assert all(isinstance(error, IntegrityError) for _, error in results[1:])
    assert ChannelEvent.select().count() == 0
    # The group goes on working afterwards.
    assert GroupCommit().run(lambda: "again") == "again"
    assert group.run(lambda: "still leads") == "still leads"


@pytest.mark.parametrize("size, batches", [(1, 5), (2, 3), (64, 1)])
def test_batches_are_bounded(app, size, batches):
    group = GroupCommit()
    group.max_batch = size
    led = []
    lead = group._lead

    def counted():
        led.append(len(group._pending))
        lead()

    group._lead = counted
    results = run_behind_a_held_leader(group, [lambda n=n: n for n in range(5)])
    assert results == [("ok", "first")] + [("ok", n) for n in range(5)]
    assert len(led) == 1 + batches  # the first alone, then the five in batches of `size`
