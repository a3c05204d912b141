"""Run the app: gunicorn (one gevent worker, which also runs the jobs) or Flask's.

`agent-platform serve` migrates and prints the first key with the whole app
loaded, then replaces itself (exec) with `python -m agent_platform.server`:
a gunicorn master that imports gunicorn and the configuration only, whose
worker builds the app after the fork. The master does nothing but watch the
worker, so it stays small (about 25 MB instead of a second copy of the app's
60), which is most of the service's memory saved.
"""

import errno
import os
import socket
import sys

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from .config import CONFIG_FILE_ENV, ConfigError, config_file, load_config
from .config_rules import listen_address

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The pipe holding what the first start prints last (the admin key): not an
# AGENT_PLATFORM_* variable, which the configuration would read as a setting.
FIRST_START_FD = "_AGENT_PLATFORM_FIRST_START_FD"


class _Gunicorn(BaseApplication):
    def __init__(self, options):
        self.options = options
        super().__init__()

    def load_config(self):
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self):
        # Runs in the worker, after the fork.
        return worker_app()


def gunicorn_options(config):
    """One worker process, gevent's (agent_platform.gevent_worker): an open
    connection costs a greenlet, not a thread, so idle, slow or streaming
    clients hold nothing others need. One process: SQLite has one writer at
    a time anyway, and it keeps the in-memory per-key limits exact. It runs
    the scheduler too."""
    return {
        "bind": f"{config['SERVER_HOST']}:{config['SERVER_PORT']}",
        "workers": 1,
        "worker_class": "agent_platform.gevent_worker.ServiceWorker",
        "worker_connections": config["SERVER_MAX_CONNECTIONS"],
        "keepalive": config["SERVER_KEEPALIVE_SECONDS"],
        "accesslog": "-" if config["SERVER_ACCESS_LOG"] else None,
        "loglevel": config["LOG_LEVEL"].lower(),
        "logger_class": _JsonLogger if config["LOG_FORMAT"] == "json" else RedactingLogger,
        # A worker silent this long (its loop blocked) is killed and started anew.
        "timeout": config["SERVER_TIMEOUT_SECONDS"],
        # gunicorn (25.1 on) opens a control socket at one path per user: two
        # services of one user would take it from each other, and nothing
        # here uses it.
        "control_socket_disable": True,
        # The scheduler's threads must start after the fork, as the metrics listener.
        "post_worker_init": _start_jobs,
        "worker_exit": _stop_jobs,
    }


class RedactingLogger(Logger):
    """gunicorn's lines (start, workers, errors, the access log) with every
    visitor token hidden, as in ours (logs.RedactTokens)."""

    def setup(self, cfg):
        from .logs import RedactTokens

        super().setup(cfg)
        for handler in self._handlers():
            handler.addFilter(RedactTokens())

    def _handlers(self):
        return self.error_log.handlers + self.access_log.handlers


class _JsonLogger(RedactingLogger):
    """gunicorn's own lines as JSON lines too; an access line carries the
    request's parts as fields."""

    def setup(self, cfg):
        from .logs import JsonFormatter

        super().setup(cfg)
        for handler in self._handlers():
            handler.setFormatter(JsonFormatter())

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        fields = {
            "remote_addr": atoms["h"],
            "method": atoms["m"],
            "path": atoms["U"],
            "query": atoms["q"],
            "status": int(atoms["s"]),
            "bytes": atoms["B"],
            "duration_ms": atoms["D"] / 1000,
            "user_agent": atoms["a"],
        }
        self.access_log.info("%s %s %s", atoms["m"], atoms["U"], atoms["s"], extra=fields)


def _start_jobs(worker):
    """Start the scheduler in the worker, once its app is loaded."""
    import gc

    from . import metrics_listen
    from .db import database
    from .scheduler import build_scheduler

    database.close_all()  # no SQLite connection is carried across the fork
    # The app's own objects (modules, routes, schemas, the OpenAPI document)
    # live as long as the worker: moved out of the collector's reach, a full
    # collection no longer walks them in the middle of a request.
    gc.freeze()
    app = worker.app.wsgi()
    if app.config["SERVER_JOBS"]:  # else `agent-platform worker` runs them
        worker.jobs = build_scheduler(app)
        worker.jobs.start()
    metrics_listen.start(app.config)
    _print_first_start_note()


def _print_first_start_note():
    """Print what `serve` left in its pipe (the first admin key), last, once
    the server listens and its jobs have logged their start. The first
    worker reads it all; one started later finds the pipe empty."""
    descriptor = os.environ.pop(FIRST_START_FD, None)
    if descriptor is None:
        return
    with os.fdopen(int(descriptor), "r", closefd=False) as pipe:
        note = pipe.read()
    print(note, end="", flush=True)


def _stop_jobs(server, worker):
    """Let the jobs running finish and start no more: left to the
    interpreter's exit, the scheduler would go on handing jobs to a pool
    already shut, and log each refusal as an error. (The jobs were told to
    take no more work at SIGTERM, gevent_worker.ServiceWorker.handle_exit.)"""
    if getattr(worker, "jobs", None) is not None:
        worker.jobs.shutdown()


def checked_configuration():
    """The configuration, or status 2 with the key at fault named and no
    traceback, as the command line answers a configuration it cannot use."""
    try:
        return load_config()
    except ConfigError as error:
        _stop(error, 2)


def check_gunicorn_master():
    """Run by gunicorn.conf.py in the master of `gunicorn app:app`, before it
    forks: a worker's configuration error could only stop gunicorn with its
    own status 3 and the worker's traceback. The secrets key is checked here
    too, as `serve` checks it before it starts gunicorn."""
    from .secretbox import configure_from

    config = checked_configuration()
    try:
        configure_from(config, config_file())
    except ConfigError as error:
        _stop(error, 2)


def worker_app():
    """The serving app, built in a gunicorn worker. A configuration error the
    master could not see (gunicorn started without gunicorn.conf.py, a key
    file changed since) is one line and status 3, which stops the master
    instead of a traceback and a worker restarted for ever."""
    from . import create_app

    try:
        _leave_out_unused_driver(load_config())
        app = create_app()
    except ConfigError as error:
        _stop(error, 3)
    return serving_app(app)


def _leave_out_unused_driver(config):
    """peewee imports psycopg (the postgresql extra) whenever it is
    installed, with asyncio and some 70 modules of its own: about 10 MB of a
    worker that serves SQLite and never calls it. A None in sys.modules
    makes that import fail as it does where the extra is absent."""
    if not config["DATABASE_URL"]:
        sys.modules.setdefault("psycopg", None)


def _stop(error, status):
    print(f"Error: {error}", file=sys.stderr, flush=True)
    sys.exit(status)


def serving_app(app):
    """`app`, once this process holds its database's serving lock; a second
    serving process stops with the reason (gunicorn halts on status 3)."""
    from .instance import AlreadyServing, claim_serving

    try:
        claim_serving()
    except AlreadyServing as error:
        _stop(error, 3)  # gunicorn's "worker failed to boot": the master stops too
    return app


class ListenError(Exception):
    """The server cannot listen where it is told to; the message says why."""


def check_listen(host, port, change="--port"):
    """Bind host:port as gunicorn will (SO_REUSEADDR), so that a busy port is
    one clear line instead of gunicorn's five retries or Werkzeug's traceback.
    `change` names what chooses the port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ListenError(_busy(port, change)) from error
            raise ListenError(f"cannot listen on {host}:{port}: {error.strerror}") from error


def _busy(port, change):
    if change != "--port":
        return f"port {port} is in use; choose another with {change}"
    other = port + 1 if port < 65535 else 8081
    return (
        f"port {port} is in use; choose another: --port {other}, server.port in the "
        f"configuration file, AGENT_PLATFORM_SERVER_PORT={other}, or `make run PORT={other}`"
    )


def check_listening(config):
    """check_listen of the service's address, and of metrics.listen if set."""
    check_listen(config["SERVER_HOST"], config["SERVER_PORT"])
    if config["METRICS_LISTEN"]:
        check_listen(*listen_address(config["METRICS_LISTEN"]), change="metrics.listen")


def run_dev_server(app, first_start_note=None):
    from werkzeug.serving import WSGIRequestHandler

    from . import metrics_listen
    from .scheduler import build_scheduler

    class RequestHandler(WSGIRequestHandler):
        """Werkzeug logs every request; here only with server.access_log on."""

        def log_request(self, code="-", size="-"):
            if app.config["SERVER_ACCESS_LOG"]:
                super().log_request(code, size)

    serving_app(app)
    if app.config["SERVER_JOBS"]:
        build_scheduler(app).start()
    metrics_listen.start(app.config)
    if first_start_note:
        print(first_start_note, end="", flush=True)
    config = app.config
    app.run(
        config["SERVER_HOST"], config["SERVER_PORT"], threaded=True, request_handler=RequestHandler
    )


def exec_server(config_path, settings, first_start_note=None):
    """Replace this process with the gunicorn master, configured as this one
    was: the file by AGENT_PLATFORM_CONFIG, command-line settings by their
    AGENT_PLATFORM_* variables (both read by load_config). The note of a
    first start goes along in a pipe, for the worker to print last."""
    environ = dict(os.environ)
    if first_start_note:
        environ[FIRST_START_FD] = str(_pipe_holding(first_start_note))
    if config_path:
        environ[CONFIG_FILE_ENV] = os.path.abspath(config_path)
    for key, value in settings.items():
        environ[f"AGENT_PLATFORM_{key}"] = str(value)
    # `python app.py` runs from the source tree without the package installed.
    search_path = [_PACKAGE_ROOT, environ.get("PYTHONPATH")]
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, search_path))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, "-m", "agent_platform.server"], environ)


def _pipe_holding(text):
    """The read end (kept across exec) of a pipe holding `text`, whose write
    end is closed: a reader gets `text`, then the end. (A note is far smaller
    than a pipe's buffer.)"""
    read_end, write_end = os.pipe()
    os.write(write_end, text.encode())
    os.close(write_end)
    os.set_inheritable(read_end, True)
    return read_end


def main():
    config = checked_configuration()
    try:
        # Again here: the port may have been taken since `serve` checked it.
        check_listening(config)
    except ListenError as error:
        _stop(error, 2)  # as `serve` refuses a busy port: not worth a restart
    _Gunicorn(gunicorn_options(config)).run()


if __name__ == "__main__":
    main()
