"""Run the app: gunicorn (one process, threads) plus the scheduler, or Flask's dev server."""

from gunicorn.app.base import BaseApplication

from .scheduler import build_scheduler


class _Gunicorn(BaseApplication):
    def __init__(self, app, options):
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self):
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self):
        return self.application


def gunicorn_options(config):
    """One worker process with threads: SQLite has one writer at a time anyway,
    and one process keeps the in-memory rate limiter exact."""
    return {
        "bind": f"{config['SERVER_HOST']}:{config['SERVER_PORT']}",
        "workers": 1,
        "worker_class": "gthread",
        "threads": config["SERVER_THREADS"],
        "accesslog": "-" if config["SERVER_ACCESS_LOG"] else None,
        "timeout": 60,
    }


def run_server(app, dev=False):
    if dev:
        build_scheduler(app).start()
        app.run(app.config["SERVER_HOST"], app.config["SERVER_PORT"], threaded=True)
        return
    options = gunicorn_options(app.config)
    # The scheduler's threads must start in the worker, after gunicorn forks.
    options["post_worker_init"] = lambda worker: build_scheduler(app).start()
    _Gunicorn(app, options).run()
