"""The rate limit kept in the database (services/rate_limits.py), which
processes serving one PostgreSQL database share. It runs on SQLite too (a
write transaction holds the file), which is how these tests run it in the
SQLite pass; the PostgreSQL pass runs them on a server."""

import multiprocessing
import time

from agent_platform import create_app
from agent_platform.db import database
from agent_platform.models.rate_limits import SLICES, RateLimitWindow, prune_windows
from agent_platform.services.rate_limits import (
    SharedWindowLimiter,
    SlidingWindowLimiter,
    limiter,
    prune_windows_job,
)
from conftest import OFFLINE, ON_POSTGRESQL


def test_a_window_counts_exactly_and_says_when_to_retry(app):
    shared = SharedWindowLimiter("test.exact", 3, 60)
    decisions = [shared.hit("key") for _ in range(4)]
    assert [decision.allowed for decision in decisions] == [True, True, True, False]
    assert [decision.remaining for decision in decisions] == [2, 1, 0, 0]
    refused = decisions[-1]
    assert 59 <= refused.retry_after <= 60
    # The oldest slice leaves first, with its last hit: a second later when
    # the hits straddled a second (seen once in `make test`).
    assert decisions[0].reset_at <= refused.reset_at <= decisions[0].reset_at + 1
    assert refused.limit == 3


def test_keys_and_limiters_are_counted_apart(app):
    first, second = SharedWindowLimiter("test.a", 1, 60), SharedWindowLimiter("test.b", 1, 60)
    assert first.hit("key").allowed and second.hit("key").allowed
    assert first.hit("other key").allowed
    assert not first.hit("key").allowed


def test_the_window_slides(app):
    shared = SharedWindowLimiter("test.slides", 2, 1)
    assert shared.hit("key").allowed and shared.hit("key").allowed
    assert not shared.hit("key").allowed
    time.sleep(1.05)  # the database's clock: both hits have left the window
    assert shared.hit("key").allowed


def test_a_refused_request_is_not_counted(app):
    shared = SharedWindowLimiter("test.refused", 1, 1)
    assert shared.hit("key").allowed
    for _ in range(5):
        assert not shared.hit("key").allowed
    time.sleep(1.05)
    assert shared.hit("key").allowed  # only the one allowed hit was kept


def test_a_window_many_of_whose_hits_have_left_counts_the_rest(app):
    # More than PostgreSQL's rate_limit_hit drops one by one (migration 0026).
    shared = SharedWindowLimiter("test.many", 20, 2)
    for _ in range(12):
        shared.hit("key")
    time.sleep(1.2)
    for _ in range(3):
        shared.hit("key")
    time.sleep(1.1)  # the twelve have left, the three have not
    decision = shared.hit("key")
    assert (decision.allowed, decision.remaining) == (True, 16)


def test_a_busy_window_holds_slices_not_every_hit(app):
    # A hit costs the same at any rate: the row no longer lists every hit.
    shared = SharedWindowLimiter("test.busy", 1_000_000, 60)
    for _ in range(2000):
        decision = shared.hit("key")
    assert decision.allowed and decision.remaining == 1_000_000 - 2000
    (row,) = RateLimitWindow.select()
    assert 1 <= len(row.hits.split()) <= SLICES + 1


def test_a_slice_leaves_the_window_with_its_last_hit(app):
    now = [6400.3125]  # slices of 60/64 s: [6400.3125, 6401.25) is one
    shared = SharedWindowLimiter("test.strict", 2, 60, clock=lambda: now[0])
    assert shared.hit("key").allowed
    now[0] = 6400.8
    assert shared.hit("key").allowed
    now[0] = 6460.5  # the first hit has left the window, not the second
    refused = shared.hit("key")
    assert (refused.allowed, refused.retry_after) == (False, 1)  # strict: within a slice
    assert refused.reset_at == 6461  # when the slice leaves, room is made
    now[0] = 6460.81
    assert shared.hit("key").allowed


def test_idle_windows_are_pruned_and_live_ones_kept(app):
    SharedWindowLimiter("test.short", 5, 0.2).hit("idle")
    SharedWindowLimiter("test.long", 5, 60).hit("live")
    time.sleep(0.3)
    with database.atomic():
        assert prune_windows() == 1
    assert [row.key for row in RateLimitWindow.select()] == ["live"]


def test_the_engine_chooses_the_limiter_and_what_the_job_prunes(app):
    """One process serves a SQLite file and counts in memory; processes on
    PostgreSQL share the database's count, whose idle windows the job prunes."""
    made = limiter("test.engine", 5, 0.1)
    assert isinstance(made, SharedWindowLimiter if ON_POSTGRESQL else SlidingWindowLimiter)
    made.hit("key")
    time.sleep(0.2)
    assert prune_windows_job() == (1 if ON_POSTGRESQL else 0)


def the_database(app):
    """The settings that name `app`'s database, for another process."""
    return {key: app.config[key] for key in ("DATABASE_PATH", "DATABASE_URL") if app.config[key]}


def _hit_many(database, ready, start, count, results):
    app = create_app({**OFFLINE, **database})
    shared = SharedWindowLimiter("test.processes", 100, 60)
    with app.app_context():
        ready.put(True)
        start.wait()
        results.put(sum(shared.hit("root key").allowed for _ in range(count)))
    database.close_all()


def test_processes_counting_one_key_together_allow_exactly_the_limit(app):
    """160 requests from four processes at once against a limit of 100."""
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Queue(), context.Event(), context.Queue()
    database.close_all()  # the file is the children's now
    workers = [
        context.Process(target=_hit_many, args=(the_database(app), ready, start, 40, results))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for _ in workers:
        ready.get(timeout=60)  # all four set up: they start together
    start.set()
    allowed = [results.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    assert sum(allowed) == 100
    assert max(allowed) <= 40
