"""Background jobs: APScheduler in the serving process, or alone (`worker`).

Jobs that drain queued work (sends, replies, deliveries) claim it with
leases in the database, so any number of processes may run them. Every
other job runs once per interval: on PostgreSQL, where several processes
each run the scheduler, it first takes its turn (models/jobs.py); on SQLite
one process runs the jobs (instance.py's lock). Each job runs inside an app
context with its own database connection, closed when the job ends.

A job registered `wakeable` can also be run at once by `wake` (webhook
deliveries, when this process commits an event that has some): its passes
then go through `Passes`, which runs one at a time whoever asks (the
interval or a wake-up) and never drops a request made while one runs.
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
# Those that `wake` may run at once: their functions.
WAKEABLE = set()
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


def job(interval_setting, in_every_process=False, wakeable=False):
    """Register `func(now=None)` to run every `interval_setting` seconds:
    once across the processes sharing a database, or `in_every_process`
    for a job that claims its work with leases; `wakeable` (one of those)
    also at once when `wake` is called in a process running its scheduler."""

    def decorator(func):
        JOBS.append((func, interval_setting))
        if in_every_process:
            IN_EVERY_PROCESS.add(func)
        if wakeable:
            WAKEABLE.add(func)
        return func

    return decorator


def wake(func):
    """Run the wakeable job `func` at once in this process, or once more
    as soon as its pass running ends; nothing where no scheduler of this
    process runs it (`serve` with server.jobs off), nor once it stops."""
    passes = _woken.get(func)
    if passes is not None and not stopping():
        passes.wake()


# This process's Passes of each wakeable job, while its scheduler runs.
_woken = {}


class Scheduler(BackgroundScheduler):
    """APScheduler's, and the Passes of its wakeable jobs: shut down, it
    waits for a pass a wake-up started as for the jobs it runs itself."""

    def __init__(self, **options):
        super().__init__(**options)
        self.passes = {}  # function -> its Passes

    def start(self, *args, **kwargs):
        super().start(*args, **kwargs)
        _woken.update(self.passes)

    def shutdown(self, wait=True):
        for func, passes in self.passes.items():
            if _woken.get(func) is passes:
                del _woken[func]
        super().shutdown(wait)
        if wait:
            for passes in self.passes.values():
                passes.wait_idle()


def build_scheduler(app):
    scheduler = Scheduler(timezone="UTC")
    for func, interval_setting in JOBS:
        if is_postgresql() and func not in IN_EVERY_PROCESS:
            func = once_per_interval(func, app.config[interval_setting])
        run = _in_app_context(app, func)
        if func in WAKEABLE:
            scheduler.passes[func] = Passes(run)
            run = scheduler.passes[func].tick
        scheduler.add_job(
            run,
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


class Passes:
    """A job's passes in this process, one at a time: a pass asked for (by
    the interval or a wake-up) while one runs is made once that one ends,
    however many asked meanwhile (as APScheduler's max_instances=1, without
    dropping the request). A pass that starts after a change was committed
    sees it: so a wake-up after each commit misses none.

    Only threads, locks and conditions: a gevent worker patches them into
    greenlets, and they are made when the scheduler is built, after that."""

    def __init__(self, run):
        self._run = run
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._running = False
        self._again = False

    def tick(self):
        """The interval's pass, in the scheduler's thread."""
        if self._take():
            self._passes()

    def wake(self):
        """A pass at once, in a thread of its own (the caller, a request
        ending, does not wait for it); or one more after the pass running."""
        if self._take():
            threading.Thread(target=self._passes, name="woken-job", daemon=True).start()

    def wait_idle(self, timeout=None):
        """Wait until no pass runs; whether none does."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._running, timeout)

    def _take(self):
        """Whether the caller is to run the passes; if one runs, it makes one more."""
        with self._lock:
            if self._running:
                self._again = True
                return False
            self._running = True
            return True

    def _passes(self):
        ended = False
        try:
            while not ended:
                self._run()
                ended = self._end_unless_asked_again()
        finally:
            if not ended:  # interrupted (the greenlet killed, the process exiting)
                with self._lock:
                    self._ended()

    def _end_unless_asked_again(self):
        """Checked and ended under one lock: a request comes before it or
        finds no pass running and starts one."""
        with self._lock:
            if self._again:
                self._again = False
                return False
            self._ended()
            return True

    def _ended(self):
        self._running = False
        self._idle.notify_all()
