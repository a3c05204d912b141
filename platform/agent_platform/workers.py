"""gunicorn's threaded worker, with widget traffic and background jobs in a
process of their own at a lower priority, and API requests served first.

One interpreter shares one GIL: with 500 open widgets polling, sending and
being answered in the process that serves the API, an integrator's request
waited for the GIL behind them (`/v1/me` p99 about twice its quiet figure,
docs/benchmarks.md), whatever the threads' order or OS priorities. So after
loading the app the worker forks a widget process (`split`), at niceness
WIDGET_NICENESS and in a scheduling group of its own (`_lower_priority`),
that runs the scheduler and serves every request whose first line names a
/widget/ path. The two are joined by a Unix socket: the main thread of each
peeks at a request's first bytes (recv with MSG_PEEK, nothing consumed) and
passes a connection whose request belongs to the other process over it
(SCM_RIGHTS), where it is served as if accepted there. The API process
keeps its in-memory per-key limits exact (a kept-alive widget connection
asking for /v1/ comes back), and the widget process has every widget
request for the per-visitor limits.

Either process ends when the other does: the widget process when the
worker is gone (gunicorn then starts a new worker, which forks a new one),
the worker when the widget process is gone, so that gunicorn starts both
anew and no job goes unscheduled. gunicorn's liveness check covers both:
the widget process beats into memory the two share, and the worker, which
alone reports to gunicorn, kills it and stops when it has been silent for
gunicorn's timeout (server.timeout_seconds), as gunicorn kills a silent
worker.

Within a process, gthread hands every request to one first-in-first-out
thread pool; here widget requests (/widget/...) wait in a queue of their
own, taken only when no other request waits, and hold at most
widget_share() of the threads, so a thread is always free of them for the
API (in the API process, should the widget process not take them).

Only the gunicorn master and worker import this (no app, no Flask).
"""

import mmap
import os
import selectors
import signal
import socket
import struct
import threading
import time
from collections import deque
from concurrent.futures import Future

from gunicorn.workers.gthread import PollableMethodQueue, TConn, ThreadWorker

from .autogroup import has_autogroups, lower_group

WIDGET_PREFIX = b"/widget/"
# A request line starts with a method of at most 7 letters and a space.
PEEK_BYTES = 8 + len(WIDGET_PREFIX)
# Widget work yields the CPU to API requests; unprivileged processes may
# always lower their own priority.
WIDGET_NICENESS = 19
WIDGET_KEEPALIVE_SECONDS = 20
WIDGET, API = "widget", "api"
# The widget process's beats so far, in the memory the two processes share.
BEATS = struct.Struct("Q")


def widget_share(threads):
    """Threads widget requests may hold at once: all but one."""
    return max(threads - 1, 1)


class ApiFirstWorker(ThreadWorker):
    link = None  # the Unix socket to the other process, once split
    serves_widgets = False  # True in the widget process
    widget_pid = None  # in the API process
    jobs = None  # the widget process's scheduler, which the server starts and stops
    heartbeat = None  # the widget process's Heartbeat, once split

    def get_thread_pool(self):
        threads = self.cfg.threads
        return ApiFirstPool(threads, threads if self.serves_widgets else widget_share(threads))

    def split(self):
        """Fork the widget process: True in it, False in the worker."""
        api_end, widget_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.heartbeat = Heartbeat()
        pid = os.fork()
        if pid:
            widget_end.close()
            self.widget_pid, self.link = pid, api_end
            api_end.setblocking(False)
            return False
        api_end.close()
        self._become_widget_process(widget_end)
        return True

    def _become_widget_process(self, link):
        self._lower_priority()
        self.pid, self.ppid = os.getpid(), os.getppid()
        self.serves_widgets, self.link = True, link
        # A widget polls every 1 to 15 s: kept alive that long, its
        # connection stays here instead of coming through the worker again.
        self.cfg.set("keepalive", WIDGET_KEEPALIVE_SECONDS)
        link.setblocking(False)
        for listener in self.sockets:  # connections come from the worker
            listener.close()
        self.sockets = []
        # The worker's threads, pipe and selector are not this process's.
        self.method_queue.close()
        self.method_queue = PollableMethodQueue()
        self.method_queue.init()
        self.poller = selectors.DefaultSelector()
        self.tpool = self.get_thread_pool()

    def _lower_priority(self):
        """Behind the API on the CPU, in a scheduling group of its own where
        the kernel groups processes by session (its autogroups, for
        processes outside a CPU cgroup), and at WIDGET_NICENESS in any case.

        Niceness alone left API requests waiting: the widget process's
        threads, all light, compete among themselves for the CPU and build
        up claims on it (lag, counted in their own slow virtual time) that
        come due before a woken API thread's, so under 500 widgets the
        kernel ran one widget thread after another for a few milliseconds
        before the API's (docs/benchmarks.md). As a group of its own, their
        claims stay within it, and the group, at WIDGET_NICENESS, seldom has
        one on the API. A session of its own also means a terminal's Ctrl-C
        reaches it only through the worker, which passes its signals on."""
        if has_autogroups():
            os.setsid()  # a new session: a new group, at niceness 0
            self._lower_group()
        os.nice(WIDGET_NICENESS)

    def _lower_group(self):
        try:
            lower_group(WIDGET_NICENESS)
        except OSError as error:
            self.log.warning("Could not lower the widget process's scheduling group: %s", error)

    def notify(self):
        """Called on each turn of a process's loop (at least once a second).
        Only the worker tells gunicorn it is alive, so that the widget
        process cannot hide a worker that hangs; the widget process tells
        the worker."""
        if self.serves_widgets:
            self.heartbeat.beat()
            return
        super().notify()
        if self.link is not None and (silence := self.heartbeat.silence()) > self.cfg.timeout:
            self._signal_widgets(signal.SIGKILL)
            self._other_gone(f"killed, silent for {silence:.0f} s")

    def run(self):
        for listener in self.sockets:
            defer_accept(listener)
        if self.link is not None:
            self.poller.register(self.link, selectors.EVENT_READ, self._receive)
        super().run()
        if self.widget_pid:
            _reap(self.widget_pid, self.cfg.graceful_timeout)

    def handle_exit(self, sig, frame):
        self._signal_widgets(signal.SIGTERM)
        super().handle_exit(sig, frame)

    def handle_quit(self, sig, frame):
        self._signal_widgets(signal.SIGQUIT)
        super().handle_quit(sig, frame)

    def _signal_widgets(self, signum):
        if self.widget_pid:
            try:
                os.kill(self.widget_pid, signum)
            except ProcessLookupError:
                pass

    def enqueue_req(self, conn):
        if self._belongs_elsewhere(conn) and self._hand_over(conn):
            return
        super().enqueue_req(conn)

    def _belongs_elsewhere(self, conn):
        if self.link is None or _has_buffered(conn):
            return False
        kind = request_kind(conn)
        return kind == (API if self.serves_widgets else WIDGET)

    def _hand_over(self, conn):
        """Pass the connection to the other process; False when it cannot
        take it now (its socket buffer full), and the request is served here."""
        try:
            socket.send_fds(self.link, [b"c"], [conn.sock.fileno()])
        except BlockingIOError:
            return False
        except OSError as error:
            self._other_gone(error)
            return False
        self.nr_conns -= 1
        conn.sock.close()  # the other process has its own descriptor now
        return True

    def _receive(self, link):
        """A connection passed by the other process, or its end."""
        try:
            data, fds, _, _ = socket.recv_fds(link, 1, 1)
        except BlockingIOError:
            return
        except OSError as error:
            data, fds = b"", []
            self.log.debug("Reading the other process's socket failed: %s", error)
        if not data and not fds:
            self._other_gone("its socket closed")
            return
        for fd in fds:
            self._adopt(socket.socket(fileno=fd))

    def _adopt(self, sock):
        try:
            client, server = sock.getpeername(), sock.getsockname()
        except OSError:  # the client went away meanwhile
            sock.close()
            return
        self.nr_conns += 1
        self.enqueue_req(TConn(self.cfg, sock, client, server))

    def _other_gone(self, reason):
        if self.link is None:
            return
        self.poller.unregister(self.link)
        self.link.close()
        self.link = None
        if self.alive:
            which = "worker" if self.serves_widgets else "widget process"
            self.log.error("The %s has ended (%s); stopping so both start anew", which, reason)
            self.alive = False


class Heartbeat:
    """The widget process beats; the worker hears how long it has been silent.

    The beats are a count in memory the fork leaves shared (anonymous,
    MAP_SHARED), and the worker times the silence on its own clock, from
    when it last saw the count change. Nothing read there is trusted as a
    time: a read in the middle of a write (struct's pack_into clears the
    bytes before it fills them, and the writer may be preempted in between)
    once gave 0.0 as the last beat's time, and a busy widget process was
    killed as silent for the machine's uptime. Any change, even a half-written
    one, means the widget process ran."""

    def __init__(self):
        self.memory = mmap.mmap(-1, BEATS.size)
        self.beats = 0
        self.heard, self.heard_at = self.memory[:], time.monotonic()

    def beat(self):
        """In the widget process, on each turn of its loop."""
        self.beats += 1
        self.memory[:] = BEATS.pack(self.beats)  # one copy of the finished bytes

    def silence(self):
        """In the worker: seconds since the beats last changed."""
        now, heard = time.monotonic(), self.memory[:]
        if heard != self.heard:
            self.heard, self.heard_at = heard, now
        return now - self.heard_at


def _has_buffered(conn):
    """Whether the connection's parser holds bytes read ahead (the request
    there is not on the socket, and would not travel with it), or speaks
    HTTP/2, whose streams a thread serves for the connection's life."""
    parser = conn.parser
    return bool(conn.is_http2 or (parser is not None and parser.unreader.buf.getvalue()))


def _reap(pid, timeout):
    """Wait for the widget process to end (it follows the worker's signals)."""
    for _ in range(int(timeout * 10) + 1):
        try:
            if os.waitpid(pid, os.WNOHANG)[0]:
                return
        except ChildProcessError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)


def defer_accept(listener):
    """Linux hands a connection to accept() once its first bytes are in, so
    a new connection's request can be read (and sorted) when it is queued;
    a client that connects and says nothing no longer holds a thread for
    gthread's five seconds of waiting for data."""
    try:
        listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 1)
    except (AttributeError, OSError):  # not Linux, or not TCP (a Unix socket)
        pass


def request_kind(conn):
    """WIDGET or API by the request line already on the connection; None
    while nothing can be read yet (a new connection, one closing, TLS)."""
    try:
        start = conn.sock.recv(PEEK_BYTES, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (OSError, ValueError):  # nothing there yet, or an SSL socket
        return None
    method, space, path = start.partition(b" ")
    if not space or len(method) > 7:
        return None  # not a request line, or too little of it yet to tell
    if path.startswith(WIDGET_PREFIX):
        return WIDGET
    return None if WIDGET_PREFIX.startswith(path) else API  # "GET /wid": not yet


def is_widget_request(conn):
    """Whether the bytes already on the connection begin a /widget/ request.
    Anything unreadable yet (a new connection, TLS) counts as the API's."""
    return request_kind(conn) == WIDGET


class ApiFirstPool:
    """What gthread needs of its executor (submit(handle, conn), shutdown),
    with two queues: the API's, then the widgets' within their share."""

    def __init__(self, threads, widget_threads):
        self.widget_threads = widget_threads
        self.queues = {False: deque(), True: deque()}  # keyed by is_widget
        self.widgets_running = 0
        self.stopping = False
        self.ready = threading.Condition()
        # Daemon threads: they start before the app loads, and a worker whose
        # app fails to load must exit with its status (3 halts gunicorn), not
        # wait for them for ever. A worker that stops has waited for its
        # connections (up to the graceful timeout) before it exits.
        self.threads = [
            threading.Thread(target=self._serve, name=f"gthread-{n}", daemon=True)
            for n in range(threads)
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
