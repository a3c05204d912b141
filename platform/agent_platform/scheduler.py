"""Background jobs: APScheduler in the serving process, or alone (`worker`).

Jobs that drain queued work (sends, replies, deliveries) claim it with
leases in the database, so any number of processes may run them. Every
other job runs once per interval: on PostgreSQL, where several processes
each run the scheduler, it first takes its turn (models/jobs.py); on SQLite
one process runs the jobs (instance.py's lock). Each job runs inside an app
context with its own database connection, closed when the job ends.
"""

import logging
import threading
from datetime import timedelta

from apscheduler.schedulers.background import BackgroundScheduler

from . import storage
from .db import database, is_postgresql, transaction
from .models.base import utcnow
from .models.jobs import JobTurn

log = logging.getLogger("agent_platform.scheduler")


class _StillRunning(logging.Filter):
    """A job still busy at its next tick is skipped on purpose (max_instances=1):
    that is not worth a warning every second while a backlog drains."""

    def filter(self, record):
        return "maximum number of running instances reached" not in record.getMessage()


logging.getLogger("apscheduler.scheduler").addFilter(_StillRunning())
# "Running job ... executed successfully" twice per tick of every job (the
# reply job ticks 10 times a second) would bury the log at INFO; failures are
# logged by `_in_app_context` and by APScheduler at WARNING and above.
logging.getLogger("apscheduler.executors.default").setLevel(logging.WARNING)

# (function, config key holding its interval in seconds); modules add theirs.
JOBS = []
# Those that every process runs (they claim their work): their functions.
IN_EVERY_PROCESS = set()
# A turn is held for this many intervals, and at least this long, so a
# process that dies holding one stops its job for no longer.
TURN_INTERVALS, TURN_LEASE_MIN_SECONDS = 2, 30
# Set when the process is told to stop: jobs that drain a backlog (webhook
# deliveries, replies) take no more work and release what they claimed but
# have not started, so the process ends within its graceful timeout; leases
# make the rest safe. (Made at import, after gevent's monkey-patching in
# `serve`'s worker: a gevent Event there.)
_stopping = threading.Event()


def stop_taking_work():
    _stopping.set()


def stopping():
    """Whether this process's jobs should take no more work."""
    return _stopping.is_set()


def job(interval_setting, in_every_process=False):
    """Register `func(now=None)` to run every `interval_setting` seconds:
    once across the processes sharing a database, or `in_every_process`
    for a job that claims its work with leases."""

    def decorator(func):
        JOBS.append((func, interval_setting))
        if in_every_process:
            IN_EVERY_PROCESS.add(func)
        return func

    return decorator


def build_scheduler(app):
    scheduler = BackgroundScheduler(timezone="UTC")
    for func, interval_setting in JOBS:
        if is_postgresql() and func not in IN_EVERY_PROCESS:
            func = once_per_interval(func, app.config[interval_setting])
        scheduler.add_job(
            _in_app_context(app, func),
            "interval",
            seconds=app.config[interval_setting],
            id=f"{func.__module__}.{func.__name__}",
            # APScheduler logs jobs by name: the function's, not the wrapper's.
            name=f"{func.__module__.removeprefix('agent_platform.')}.{func.__name__}",
            max_instances=1,
            coalesce=True,
        )
    return scheduler


def once_per_interval(func, interval):
    """`func` run only when this process takes its turn (models/jobs.py)."""
    name = f"{func.__module__}.{func.__name__}"
    every = timedelta(seconds=interval)
    lease = timedelta(seconds=max(TURN_LEASE_MIN_SECONDS, TURN_INTERVALS * interval))

    def run_in_turn(now=None):
        with transaction():
            taken = JobTurn.take(name, utcnow(), every, lease)
        if not taken:
            return None
        try:
            return func()
        finally:
            with transaction():
                JobTurn.give_back(name)

    run_in_turn.__name__, run_in_turn.__module__ = func.__name__, func.__module__
    return run_in_turn


def _in_app_context(app, func):
    def run():
        with app.app_context():
            try:
                func()
            except Exception as error:
                # A full or read-only disk is logged once (storage.py); the
                # job's work waits for its next run.
                if storage.failed(error) is None:
                    log.exception("job %s failed", func.__name__)
            finally:
                if not database.is_closed():
                    database.close()

    run.__name__ = func.__name__
    return run
