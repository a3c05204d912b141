"""The Flask application class of the service."""

from inspect import CO_COROUTINE

from flask import Flask

from .form_bodies import BoundedFormRequest
from .json import ApiJSONProvider


class PlatformFlask(Flask):
    json_provider_class = ApiJSONProvider
    request_class = BoundedFormRequest

    def ensure_sync(self, func):
        # Flask asks inspect, for every hook and view on every request, whether
        # it is a coroutine function: seven calls per request here. A plain
        # function's code flags answer it at once; anything else (async views,
        # callables without code) goes the usual way.
        code = getattr(getattr(func, "__func__", func), "__code__", None)
        if code is not None and not code.co_flags & CO_COROUTINE:
            return func
        return super().ensure_sync(func)
