"""HTTP layer: one flask-smorest Blueprint per resource, one error renderer."""

import hashlib

from flask import current_app, request
from flask_smorest import Api as SmorestApi
from marshmallow import fields
from werkzeug.exceptions import HTTPException

from ..errors import ApiError
from . import (
    agent_activity,
    agents,
    appointments,
    channel_events,
    channels,
    chats,
    contacts,
    conversations,
    custom_fields,
    docs,
    errors,
    idle_actions,
    inbound,
    intentions,
    interactions,
    leads,
    learning,
    mcp_servers,
    media,
    messages,
    metrics,
    opportunities,
    pipeline,
    pipeline_columns,
    reply_preview,
    scoring_rules,
    system,
    trainings,
    transfer_rules,
    users,
    variant,
    webhooks,
    widget,
)
from .schemas.common import ErrorSchema

# Each resource's blueprint; all are served under /v1.
V1_BLUEPRINTS = [system.blp, custom_fields.blp, agents.blp, trainings.blp, webhooks.blp]
# Channels, contacts, conversations, messages and chats (issue 4).
V1_BLUEPRINTS += [channels.blp, contacts.blp, conversations.blp, messages.blp, chats.blp]
# MCP servers and the tools of agents (issue 3).
V1_BLUEPRINTS += [mcp_servers.blp, mcp_servers.agent_tools_blp]
# The reply engine's routing rules and reply preview (issue 7).
V1_BLUEPRINTS += [intentions.blp, transfer_rules.blp, idle_actions.blp, reply_preview.blp]
# A channel's network event log and credential check (issue 6).
V1_BLUEPRINTS += [channel_events.blp]
# The sales side: leads, the pipeline, interactions (issue 20).
V1_BLUEPRINTS += [leads.blp, scoring_rules.blp, pipeline_columns.blp, opportunities.blp]
V1_BLUEPRINTS += [interactions.blp]
# Appointments, availability and reminders (issue 21).
V1_BLUEPRINTS += [appointments.blp, appointments.agent_availability_blp]
# An agent's webhooks and history (issue 21).
V1_BLUEPRINTS += [agent_activity.blp]
# Unanswered questions and what the matcher learns from them (issue 22).
V1_BLUEPRINTS += [learning.blp]
# The people who sign in to the inbox at /app (issue 39).
V1_BLUEPRINTS += [users.blp]
# Blueprints served at the root without /v1 (the spec's variant address form).
ROOT_BLUEPRINTS = [variant.blp]
# Network callbacks and downloaded media files (issue 6).
ROOT_BLUEPRINTS += [inbound.blp, media.blp]
# Prometheus metrics of the key's workspace (issue 41).
ROOT_BLUEPRINTS += [metrics.blp]


class Api(SmorestApi):
    """flask-smorest's Api, serving `document` (a finished APISpec) when
    given instead of building its own while the blueprints register."""

    ERROR_SCHEMA = ErrorSchema

    def __init__(self, app, document=None):
        self.document = document
        super().__init__(app)

    def register_blueprint(self, blp, **options):
        if self.document is None:
            return super().register_blueprint(blp, **options)
        name = options.get("name", blp.name)
        self._app.extensions["flask-smorest"]["blp_name_to_api"][name] = self
        return self._app.register_blueprint(blp, **options)

    def handle_http_exception(self, error):
        return errors.handle_http_exception(error)

    def _openapi_json(self):
        """The document as flask-smorest serves it, encoded once: it does not
        change while the process runs, and indenting its 600 KB in the
        pure-Python encoder took the worker about 18 ms per request, on a
        route that needs no key. Its ETag lets a client ask again for
        nothing (If-None-Match; other conditions are not for a document)."""
        body, tag = self._encoded_document()
        unchanged = request.if_none_match.contains_weak(tag)
        response = current_app.response_class(
            b"" if unchanged else body, 304 if unchanged else 200, mimetype="application/json"
        )
        response.set_etag(tag)
        return response

    def _encoded_document(self):
        encoded = _ENCODED.get(self.spec)
        if encoded is None:
            document = self.spec.to_dict()
            body = current_app.json.dumps(document, indent=2, sort_keys=False).encode()
            encoded = _ENCODED[self.spec] = (body, hashlib.sha256(body).hexdigest()[:32])
        return encoded


# The OpenAPI document depends on the code and the version only, and building
# it was two thirds of create_app's time (the test suite makes an app per
# test): the first app of a process builds it, the next ones serve it too.
_DOCUMENTS = {}
_ENCODED = {}  # a document's JSON and its ETag, by document


API_DESCRIPTION = """\
Self-hosted conversational AI agents behind one REST API: agents and their
knowledge (trainings), channels (WhatsApp, Telegram, e-mail, a website
widget), contacts, conversations, messages, webhooks, leads and appointments.

**Authentication.** An API key, sent as `Authorization: Bearer <key>` or as the
`x-api-key` header; only operations whose `security` is empty (the health
check, the networks' callbacks) need none. Each operation names the scope it
needs (`x-required-scope`); another workspace's object is 404.

**Errors** are `{"error": {"code", "message", "status"}}`, the message naming
the field or header at fault. Lists are paged with `page` and `limit`.

Interactive reference: [/docs](/docs). Guides, and how to generate a client
from this document: `docs/api.md` in the project's source."""


def openapi_settings(version):
    return {
        "API_TITLE": "Agent Platform API",
        "API_VERSION": version,
        "OPENAPI_VERSION": "3.0.3",
        "OPENAPI_URL_PREFIX": "/",
        "OPENAPI_JSON_PATH": "openapi.json",
        "OPENAPI_SWAGGER_UI_PATH": "docs",
        "OPENAPI_SWAGGER_UI_URL": docs.ASSETS_URL,
        "API_SPEC_OPTIONS": {
            "info": {"description": API_DESCRIPTION},
            # Relative: generated clients take the base URL they are given, and
            # the document stays the same whatever host or address serves it.
            "servers": [{"url": "/", "description": "The server this document came from"}],
            "components": {
                "securitySchemes": {
                    "ApiKeyHeader": {
                        "type": "apiKey",
                        "in": "header",
                        "name": "x-api-key",
                    },
                    "BearerAuth": {"type": "http", "scheme": "bearer"},
                }
            },
        },
    }


def _query_style(converter, field, **kwargs):
    """A query parameter's OpenAPI serialisation, where its field names one."""
    return {key: field.metadata[key] for key in ("style", "explode") if key in field.metadata}


def init_api(app):
    built = _DOCUMENTS.get(app.config["API_VERSION"])
    api = Api(app, built)
    if built is None:
        # Documented as a standard format, which clients and generators know.
        api.register_field(fields.Url, "string", "uri")
        api.ma_plugin.converter.add_parameter_attribute_function(_query_style)
    for blueprint in V1_BLUEPRINTS:
        api.register_blueprint(blueprint, url_prefix="/v1" + blueprint.url_prefix)
    for blueprint in ROOT_BLUEPRINTS:
        api.register_blueprint(blueprint)
    if built is None:
        _DOCUMENTS[app.config["API_VERSION"]] = api.spec
    else:
        api.spec = built
    app.register_blueprint(docs.blp)
    app.register_blueprint(widget.blp)  # the website widget's own protocol
    app.register_error_handler(ApiError, errors.handle_api_error)
    app.register_error_handler(HTTPException, errors.handle_http_exception)
    app.register_error_handler(Exception, errors.handle_unexpected)
    pipeline.install(app)
    inbound.install(app)  # stored network callbacks skip the request machinery
    return api
