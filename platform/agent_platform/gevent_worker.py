"""gunicorn's gevent worker, with what it lacks against slow and greedy clients.

An open connection costs a greenlet, not a thread: idle, slow or streaming
clients no longer hold the threads every other request needs. gunicorn's
worker already closes a connection whose request (line and headers) has
not arrived within its keepalive time, which here is two settings: a new
connection's first request has `server.header_timeout_seconds`, a kept-alive
one waits `server.keepalive_seconds` for its next. What gunicorn lacks is
added here, and nothing else:

- a body that does not arrive whole within `server.body_timeout_seconds` is
  answered 408 (in the API's error format) and its connection closed;
- a body in a coding the service does not read (Content-Encoding: gzip, or
  Transfer-Encoding: gzip, chunked, which gunicorn passes on undecoded) is
  refused before it is read: 415 and 501, naming the header;
- a body refused unread (past the size limit, or in such a coding) is
  dropped in steps once the answer is written, at most twice the limit,
  and the connection closed past that: gunicorn's worker reads all of it
  before the next request, in one go on the loop, however large;
- what gunicorn answers itself (a malformed request line or header, one too
  long) is in the API's error format rather than an HTML page;
- the loop turns at least every millisecond or so, to serve every ready
  connection (`_give_way`): gevent switches only where a greenlet would
  block, and a kept-alive connection whose next request is already there
  never does;
- no address holds more than `server.max_connections_per_address`
  connections at once, an IPv6 address's /64 counting as one (addresses.py;
  not applied behind a proxy, `server.proxy_hops` > 0, where every
  connection comes from the proxy);
- a SQLite COMMIT runs on one of gevent's native threads (`OneThread`,
  db.run_commits_in), a long statement on another (a training's text
  indexed, a search reading every message: long_statements.run_in),
  and a password's hash on a third (about 90 ms,
  services.users.run_hashes_in): they no longer stop every other
  connection of the process while they last;
- SIGTERM tells the background jobs at once to take no more work, so they
  end within gunicorn's graceful timeout with the HTTP requests in flight,
  and ends the open push streams (events.live.close_all), which would
  otherwise hold the stop for the whole graceful timeout.

The master imports this module before the fork: it imports nothing of the app.
"""

import contextlib
import io
import json
import time
from collections import Counter

import gevent
from gevent.local import local
from gevent.threadpool import ThreadPool
from gunicorn import util as gunicorn_util
from gunicorn.workers.ggevent import GeventWorker

from .addresses import limited_as
from .bodies import unread_content_coding, unread_transfer_codings
from .turns import NEXT_POLL


class BodyStalled(Exception):
    """Raised into a body read by its deadline. An Exception, unlike
    gevent.Timeout: gunicorn then marks the body failed and closes the
    connection instead of looking for a next request after it."""


# How long the connection being served may keep the loop before it lets the
# others have their turn (_give_way, a sleep of turns.NEXT_POLL).
TURN_SECONDS = 0.001
# What BodyDeadline reads at a time of a refused body it drops, and of a
# body of unknown length (chunked), the loop's turn given between: gunicorn
# parses each chunk in Python, and a body in chunks of one byte (800,000 of
# them) held every other request 1.4 s when read in one go. (Smaller steps
# of a body of known length would cost more: gunicorn copies what it read
# ahead at every step.)
STEP = 65536
CHUNKED_STEP = 8192


class ServiceWorker(GeventWorker):
    jobs = None  # the scheduler, which server.py starts after the fork and stops
    header_timeout = 10.0
    per_address = 0  # no cap
    _turn = (-1, 0.0)  # the loop's iteration, and when this worker first saw it

    def load_wsgi(self):
        super().load_wsgi()
        gunicorn_util.write_error = write_error_in_json  # gunicorn's only writer of its errors
        config = getattr(self.wsgi, "config", {})  # the Flask app's
        if "DATABASE_PATH" in config:  # the service (a bench's bare app has none)
            from . import long_statements
            from .db import run_commits_in
            from .services.users import run_hashes_in

            run_commits_in(OneThread().run)
            long_statements.run_in(OneThread().run)
            run_hashes_in(OneThread().run)
        self.header_timeout = config.get("SERVER_HEADER_TIMEOUT_SECONDS", self.header_timeout)
        if not config.get("SERVER_PROXY_HOPS"):
            self.per_address = config.get("SERVER_MAX_CONNECTIONS_PER_ADDRESS", 0)
        self.open_from = Counter()
        self.waiting = {}  # connection -> (its greenlet, its Timeout) while waiting for a request
        self._connection = local()  # this greenlet's connection
        self._loop = gevent.get_hub().loop
        if "SERVER_BODY_TIMEOUT_SECONDS" in config:
            self.wsgi = BodyDeadline(self.wsgi, config["SERVER_BODY_TIMEOUT_SECONDS"])

    def handle(self, listener, client, addr):
        """One connection, in a greenlet of its own."""
        peer = limited_as(addr[0]) if isinstance(addr, tuple) else None
        if self.per_address and peer is not None and self.open_from[peer] >= self.per_address:
            self.log.debug("Refused a connection from %s: %d open", peer, self.open_from[peer])
            client.close()
            return
        self.open_from[peer] += 1
        self._connection.fresh, self._connection.client = True, client
        try:
            super().handle(listener, client, addr)
        finally:
            self.open_from[peer] -= 1
            if not self.open_from[peer]:
                del self.open_from[peer]

    def timeout_ctx(self):
        """The time a request may take to arrive (its line and headers; a
        kept-alive connection's waiting included): closed silently past it.
        Once the worker stops, a connection whose response has just ended
        (a stream closed by close_all) is closed instead of kept alive."""
        self._give_way()  # first: the worker may have been told to stop meanwhile
        if not self.alive:
            raise StopIteration("the worker is stopping")  # gunicorn closes it
        connection = self._connection
        seconds = self.header_timeout if connection.fresh else self.cfg.keepalive
        connection.fresh = False
        return self._waiting(connection.client, seconds)

    def _give_way(self):
        """Before a connection's next request: let the loop turn (serving
        every other connection that is ready, and the jobs' timers) when it
        has not for TURN_SECONDS. gevent switches greenlets only where one
        would block, and a client that sends its next request as soon as it
        has its answer, or many at once, is never waited for: its connection
        was served again and again while every other waited (16 busy
        connections: p50 0.6 ms, p99 0.5-1.5 s; behind 10,000 pipelined
        requests, a new client waited 4.2 s)."""
        iteration, now = self._loop.iteration, time.monotonic()
        if iteration != self._turn[0]:
            self._turn = (iteration, now)
        elif now - self._turn[1] > TURN_SECONDS:
            gevent.sleep(NEXT_POLL)

    @contextlib.contextmanager
    def _waiting(self, client, seconds):
        try:
            with gevent.Timeout(seconds, False) as timeout:
                self.waiting[client] = (gevent.getcurrent(), timeout)
                yield
        finally:
            self.waiting.pop(client, None)

    def handle_exit(self, sig, frame):
        if self.jobs is not None:
            from .scheduler import stop_taking_work

            stop_taking_work()
        super().handle_exit(sig, frame)
        gevent.spawn(_close_streams)  # out of the handler: it takes locks
        # Connections waiting for a request end now, not at their timeout
        # (the worker waits for every open connection, up to gunicorn's
        # graceful timeout): their clients see a kept-alive connection close.
        for greenlet, timeout in list(self.waiting.values()):
            greenlet.kill(timeout, block=False)  # as if its time were up


# gunicorn's answers to requests it could not parse, by status (its HTML
# pages say which: a header, the request line, a chunk).
_GUNICORN_ERROR_CODES = {
    400: "MALFORMED_REQUEST",
    403: "FORBIDDEN",
    414: "REQUEST_LINE_TOO_LONG",
    417: "EXPECTATION_FAILED",
    431: "HEADERS_TOO_LARGE",
    500: "INTERNAL_ERROR",
    501: "UNSUPPORTED_TRANSFER_ENCODING",
}


def write_error_in_json(sock, status, reason, message):
    """gunicorn's error answer (util.write_error), in the API's format."""
    code = _GUNICORN_ERROR_CODES.get(status, "BAD_REQUEST")
    error = {"code": code, "message": message or reason, "status": status}
    body = json.dumps({"error": error}).encode() + b"\n"
    head = (
        f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    gunicorn_util.write_nonblock(sock, head.encode("latin-1") + body)


class OneThread:
    """Calls run on one native thread of gevent's, each greenlet waiting
    for its own without holding the others up. One thread for each kind of
    call is enough: commits of write transactions take turns anyway (and
    each thread that runs SQLite gets a malloc arena of its own to keep);
    long statements are rare, and one at a time bounds what they take;
    password hashes are few, and one at a time bounds their CPU."""

    def __init__(self):
        self.pool = ThreadPool(1)

    def run(self, function, *args):
        """`function(*args)`. The wait ends only with the call: a greenlet
        interrupted meanwhile (a timeout, a kill) would otherwise roll back
        or pool a connection its thread is still committing on, so the
        interruption is raised once the call is over."""
        result = self.pool.spawn(_outcome, function, args)
        interruption = None
        while not result.ready():
            try:
                result.wait()
            except BaseException as error:  # raised again below
                interruption = error
        if interruption is not None:
            raise interruption
        returned, value = result.get()
        if not returned:
            raise value
        return value


def _outcome(function, args):
    """(True, what `function` returned) or (False, what it raised): raised
    in the pool's thread, gevent would print it as an unhandled error."""
    try:
        return True, function(*args)
    except Exception as error:
        return False, error


def _close_streams():
    from .events import live

    live.close_all()


class BodyDeadline:
    """WSGI middleware: a request's body is read whole before the app runs,
    within `seconds`; a body that stalls is answered 408 and not read on.
    A body larger than the app takes is left to the app, which refuses it
    (413) without reading it; one of unknown length (chunked) is read up to
    one byte past that limit, which the app then refuses as well."""

    def __init__(self, app, seconds):
        self.app, self.seconds = app, seconds
        self.limit = app.config["LIMITS_MAX_BODY_BYTES"]

    def __call__(self, environ, start_response):
        source = environ["wsgi.input"]
        refusal = self._unread_coding(environ)
        if refusal is not None:
            answer = self._answer(environ, start_response, *refusal)
            return self._then_discard(answer, source, environ)
        size = self._readable(environ)
        if size is None:
            answer = self.app(environ, start_response)  # a 413 past the limit
            past = self._past_limit(environ)
            return self._then_discard(answer, source, environ) if past else answer
        step = size if "CONTENT_LENGTH" in environ else CHUNKED_STEP
        try:
            with gevent.Timeout(self.seconds, BodyStalled()):
                body = b"".join(_steps(source, size, step))
        except BodyStalled:
            return self._stalled(environ, start_response)
        environ["wsgi.input"] = io.BytesIO(body)
        answer = self.app(environ, start_response)
        return self._then_discard(answer, source, environ) if len(body) > self.limit else answer

    def _then_discard(self, answer, source, environ):
        """`answer`, and once it is written, what the client still sends of
        a body the app did not read (it is refused), read and dropped: up
        to twice what the app takes, in steps, within the body's time; the
        connection then serves the next request. Past that it closes.
        gunicorn would read the rest whole before the next request, in one
        go on the loop: a client sending 200 MB (no key needed) held every
        other request for 13 s."""
        step = STEP if "CONTENT_LENGTH" in environ else CHUNKED_STEP
        return _ThenClose(answer, lambda: self._discard(source, 2 * self.limit, step))

    def _discard(self, source, most, step):
        dropped = 0
        try:
            with gevent.Timeout(self.seconds, BodyStalled()):
                for part in _steps(source, most + 1, step):
                    dropped += len(part)
        except Exception:  # BodyStalled, or a body gunicorn cannot frame
            dropped = most + 1
        if dropped > most:
            source.failed = True  # gunicorn closes the connection instead of reading on

    def _past_limit(self, environ):
        length = environ.get("CONTENT_LENGTH", "")
        return length.isdigit() and int(length) > self.limit

    def _readable(self, environ):
        """How much of the body to read now; None to leave it to the app."""
        length = environ.get("CONTENT_LENGTH", "")
        if length.isdigit() and 0 < int(length) <= self.limit:
            return int(length)
        if not length and "HTTP_TRANSFER_ENCODING" in environ:
            return self.limit + 1
        return None

    def _unread_coding(self, environ):
        """(status, code, message, headers) refusing a body in a coding the
        service does not decode; None for a body as it is, or none."""
        if "HTTP_TRANSFER_ENCODING" not in environ and "HTTP_CONTENT_ENCODING" not in environ:
            return None  # most requests, at the cost of two lookups
        transfer = unread_transfer_codings(environ)
        if transfer:
            message = f"Transfer-Encoding: {transfer} is not supported; send the body uncompressed."
            return 501, "UNSUPPORTED_TRANSFER_ENCODING", message, {}
        content = unread_content_coding(environ)
        if content:
            message = f"Content-Encoding: {content} is not supported; send the body uncompressed."
            return 415, "UNSUPPORTED_CONTENT_ENCODING", message, {"Accept-Encoding": "identity"}
        return None

    def _stalled(self, environ, start_response):
        message = f"The request body did not arrive within {self.seconds:g} s."
        return self._answer(environ, start_response, 408, "REQUEST_TIMEOUT", message)

    def _answer(self, environ, start_response, status, code, message, headers=None):
        from .api.errors import error_response

        with self.app.app_context():
            response = error_response(code, message, status, headers)
        return response(environ, start_response)


def _steps(source, size, step):
    """Up to `size` bytes of `source`, in parts of `step`, the loop's turn
    given between them."""
    left = size
    while left > 0:
        part = source.read(min(step, left))
        if not part:
            return
        yield part
        left -= len(part)
        if left > 0:
            gevent.sleep(NEXT_POLL)


class _ThenClose:
    """A WSGI response body that runs `then` once the server has written it."""

    def __init__(self, answer, then):
        self.answer, self.then = answer, then

    def __iter__(self):
        return iter(self.answer)

    def close(self):
        try:
            if hasattr(self.answer, "close"):
                self.answer.close()
        finally:
            self.then()
