"""Background jobs: APScheduler in the serving process, or alone (`worker`).

Jobs claim their work with leases in the database, so any number of
processes may run them. Each job runs inside an app context with its own
database connection, closed when the job ends.
"""

import logging
import threading

from apscheduler.schedulers.background import BackgroundScheduler

from . import storage
from .db import database

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


def job(interval_setting):
    """Register `func(now=None)` to run every `interval_setting` seconds."""

    def decorator(func):
        JOBS.append((func, interval_setting))
        return func

    return decorator


def build_scheduler(app):
    scheduler = BackgroundScheduler(timezone="UTC")
    for func, interval_setting in JOBS:
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
