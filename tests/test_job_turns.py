"""Jobs that run once per interval across every process sharing a database
(scheduler.once_per_interval, models/jobs.py)."""

import multiprocessing
import time
from datetime import timedelta

from agent_platform import create_app, scheduler
from agent_platform.db import database, transaction
from agent_platform.models.base import utcnow
from agent_platform.models.jobs import JobTurn
from conftest import OFFLINE
from test_rate_limits_shared import the_database

MINUTE, LEASE = timedelta(seconds=60), timedelta(seconds=120)


def take(name, now):
    with transaction():
        return JobTurn.take(name, now, MINUTE, LEASE)


def test_a_turn_is_taken_once_per_interval(app):
    now = utcnow()
    assert take("job", now)
    JobTurn.give_back("job")
    assert not take("job", now)  # the same instant, from another process
    assert not take("job", now + timedelta(seconds=59))
    assert take("job", now + MINUTE)
    assert take("other job", now)  # each job has its own turn


def test_a_turn_held_past_its_interval_is_not_taken_until_its_lease_ends(app):
    now = utcnow()
    assert take("slow job", now)  # still running: not given back
    assert not take("slow job", now + MINUTE)
    assert take("slow job", now + LEASE)  # the process holding it died


def test_a_job_in_turn_runs_once_however_many_ticks_ask(app):
    ran = []
    job = scheduler.once_per_interval(lambda: ran.append(1) or len(ran), 60)
    assert [job(), job(), job()] == [1, None, None]
    assert JobTurn.get_by_id(f"{__name__}.<lambda>").held_until is None  # given back


def test_a_failing_job_gives_its_turn_back(app):
    def broken():
        raise RuntimeError("boom")

    job = scheduler.once_per_interval(broken, 0.01)
    for _ in range(2):
        try:
            job()
        except RuntimeError:
            pass
        time.sleep(0.02)
    assert JobTurn.get_by_id(f"{__name__}.broken").held_until is None


def _tick(database, ready, start, results):
    app = create_app({**OFFLINE, **database})
    ran = []
    job = scheduler.once_per_interval(lambda: ran.append(1), 1)
    with app.app_context():
        ready.put(True)
        start.wait()
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            job()
            time.sleep(0.01)
        results.put(len(ran))
    database.close_all()


def test_processes_ticking_together_run_a_job_once_per_interval(app):
    """Three processes ask every 10 ms for 3.5 s: the job of one second runs
    four times in all (at 0, 1, 2 and 3 s), whichever processes run it."""
    context = multiprocessing.get_context("spawn")
    ready, start, results = context.Queue(), context.Event(), context.Queue()
    database.close_all()
    processes = [
        context.Process(target=_tick, args=(the_database(app), ready, start, results))
        for _ in range(3)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get(timeout=60)
    start.set()
    counts = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    assert sum(counts) == 4
