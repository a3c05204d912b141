"""Agent Platform: conversational AI agents behind one REST API."""

__version__ = "0.2.0"


def create_app(config=None, config_path=None):
    """Build the WSGI app. `config` (a dict) overrides every other source."""
    # Imported here, not at the top, so that importing the package (as the
    # gunicorn master does) costs nothing of Flask, peewee or the API.
    from . import events, logs, web
    from .api import init_api, openapi_settings
    from .api.application import PlatformFlask
    from .channels import adapters
    from .config import load_config
    from .db import end_request, init_database
    from .replies import engine
    from .secretbox import configure_from
    from .services import intake
    from .services.rate_limits import ADDRESSES_COUNTED, limiter
    from .tools import toolset

    # Every channel type registers itself, its secret settings and its jobs
    # with it, before any channel is read or the scheduler is built.
    adapters.load()
    # What the adapters receive is stored by the one intake service.
    adapters.register_intake(intake.store)
    # The agent's tools, above the services they call, given to the reply engine.
    engine.register_toolsets(toolset.Toolset.of_agent)
    app = PlatformFlask(__name__)
    app.config.update(load_config(config_path, overrides=config))
    app.config.update(openapi_settings(__version__))
    # Werkzeug enforces this while the body is read (chunked bodies included).
    app.config["MAX_CONTENT_LENGTH"] = app.config["LIMITS_MAX_BODY_BYTES"]
    # A multipart form's text fields may hold all of it too, as a JSON body's
    # do: Flask's 500 KB refused a text training from the knowledge page
    # that the API takes (5,000,000 characters).
    app.config["MAX_FORM_MEMORY_SIZE"] = app.config["LIMITS_MAX_BODY_BYTES"]
    logs.configure(app.config)
    init_database(
        app.config["DATABASE_PATH"],
        app.config["DATABASE_BUSY_TIMEOUT_SECONDS"],
        url=app.config["DATABASE_URL"],
    )
    # The keys of stored secrets (none yet on a first start: migrating makes one).
    configure_from(app.config, config_path)
    limit, window = app.config["RATE_LIMIT_REQUESTS"], app.config["RATE_LIMIT_WINDOW_SECONDS"]
    # Live keys count against their root key (a bounded set: keys in the
    # database); requests with a bad key against the client's address, of
    # which a caller can make up any number, so those are capped.
    app.extensions["rate_limiter"] = limiter("api.key", limit, window)
    app.extensions["address_rate_limiter"] = limiter(
        "api.address", limit, window, max_keys=ADDRESSES_COUNTED
    )
    # peewee opens the connection lazily, on a request's first query.
    app.teardown_request(lambda exc: end_request())
    # Events committed by a request or job wake live subscribers and the
    # delivery job at once.
    events.init_app(app)
    init_api(app)
    web.install(app)  # the inbox's pages at /app
    return app
