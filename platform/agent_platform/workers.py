"""gunicorn's threaded worker with API requests served first.

gthread hands every request to one first-in-first-out thread pool: with
500 open widgets polling, an integrator's API request waited for a thread
behind their polls and sends (p99 of that wait 160 to 500 ms,
docs/benchmarks.md). Here the main thread peeks at a request's first bytes
before queueing it: widget requests (/widget/...) wait in a queue of their
own, taken only when no other request waits, and hold at most
widget_share() of the threads, so a thread is always free of them for the
API. Widgets wait a little longer under load, which their poll interval
hides; API clients do not wait behind them.

Only the gunicorn master and worker import this (no app, no Flask).
"""

import socket
import threading
from collections import deque
from concurrent.futures import Future

from gunicorn.workers.gthread import ThreadWorker

WIDGET_PREFIX = b"/widget/"
# A request line starts with a method of at most 7 letters and a space.
PEEK_BYTES = 8 + len(WIDGET_PREFIX)


def widget_share(threads):
    """Threads widget requests may hold at once: all but one."""
    return max(threads - 1, 1)


class ApiFirstWorker(ThreadWorker):
    def get_thread_pool(self):
        return ApiFirstPool(self.cfg.threads, widget_share(self.cfg.threads))

    def run(self):
        for listener in self.sockets:
            defer_accept(listener)
        super().run()


def defer_accept(listener):
    """Linux hands a connection to accept() once its first bytes are in, so
    a new connection's request can be read (and sorted) when it is queued;
    a client that connects and says nothing no longer holds a thread for
    gthread's five seconds of waiting for data."""
    try:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
    except (AttributeError, OSError):  # not Linux, or not TCP (a Unix socket)
        pass


def is_widget_request(conn):
    """Whether the bytes already on the connection begin a /widget/ request.
    Anything unreadable yet (a new connection, TLS) counts as the API's."""
    try:
        start = conn.sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (OSError, ValueError):  # nothing there yet, or an SSL socket
        return False
    method, _, path = start.partition(b" ")
    return len(method) <= 7 and path.startswith(WIDGET_PREFIX)


class ApiFirstPool:
    """What gthread needs of its executor (submit(handle, conn), shutdown),
    with two queues: the API's, then the widgets' within their share."""

    def __init__(self, threads, widget_threads):
        self.widget_threads = widget_threads
        self.queues = {False: deque(), True: deque()}  # keyed by is_widget
        self.widgets_running = 0
        self.stopping = False
        self.ready = threading.Condition()
        self.threads = [
            threading.Thread(target=self._serve, name=f"gthread-{n}") for n in range(threads)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, fn, conn):
        future = Future()
        with self.ready:
            self.queues[is_widget_request(conn)].append((future, fn, conn))
            self.ready.notify()
        return future

    def shutdown(self, wait=True, cancel_futures=False):
        """Queued requests are still served, as ThreadPoolExecutor does."""
        with self.ready:
            self.stopping = True
            self.ready.notify_all()
        if wait:
            for thread in self.threads:
                thread.join()

    def _serve(self):
        while (work := self._next()) is not None:
            widget, (future, fn, conn) = work
            try:
                if future.set_running_or_notify_cancel():
                    _run(future, fn, conn)
            finally:
                if widget:
                    self._widget_done()

    def _next(self):
        """(is_widget, work), the API's first; None once stopping and idle."""
        with self.ready:
            while True:
                if self.queues[False]:
                    return False, self.queues[False].popleft()
                if self.queues[True] and self.widgets_running < self.widget_threads:
                    self.widgets_running += 1
                    return True, self.queues[True].popleft()
                if self.stopping and not any(self.queues.values()):
                    self.ready.notify_all()
                    return None
                self.ready.wait()

    def _widget_done(self):
        with self.ready:
            self.widgets_running -= 1
            self.ready.notify()


def _run(future, fn, conn):
    try:
        result = fn(conn)
    except BaseException as error:  # gthread's handle catches its own; be sure
        future.set_exception(error)
    else:
        future.set_result(result)
