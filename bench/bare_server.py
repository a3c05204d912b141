"""Serve a bare Flask app (module:app, from bench/) as `serve` serves the service.

The baselines' server: the gunicorn options `serve` takes from the same
configuration (agent_platform.server.gunicorn_options, AGENT_PLATFORM_*
settings included), so one gevent worker of the service's own worker class,
its keepalive, connection limits and timeouts, without the service's jobs.
The worker class reads its timeouts and limits from the app's config, so the
server's settings are copied onto the bare app's.

    python bench/bare_server.py bare_app:app PORT
"""

import importlib
import sys

from gunicorn.app.base import BaseApplication

from agent_platform.config import load_config
from agent_platform.server import gunicorn_options

JOB_HOOKS = ("post_worker_init", "worker_exit")


class BareServer(BaseApplication):
    def __init__(self, spec, port):
        self.spec, self.config = spec, load_config()
        options = gunicorn_options(self.config)
        self.options = {name: value for name, value in options.items() if name not in JOB_HOOKS}
        self.options["bind"] = f"127.0.0.1:{port}"
        super().__init__()

    def load_config(self):
        for name, value in self.options.items():
            self.cfg.set(name, value)

    def load(self):
        module, _, name = self.spec.partition(":")
        app = getattr(importlib.import_module(module), name)
        served = {key: value for key, value in self.config.items() if key.startswith("SERVER_")}
        app.config.update(served, LIMITS_MAX_BODY_BYTES=self.config["LIMITS_MAX_BODY_BYTES"])
        return app


if __name__ == "__main__":
    BareServer(sys.argv[1], int(sys.argv[2])).run()
