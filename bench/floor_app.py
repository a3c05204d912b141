"""The stack's floor: GET /v1/me and a page of custom fields as Flask,
flask-smorest and marshmallow serve them with no service behind them.

The same paths, bodies and headers as the service's, answered from memory:
the key is a dictionary lookup, /v1/me's body and the 1,000 fields are built
once at start, and the response schemas hand the body on as it is (as the
service's own rendered schemas do). What is left is what the chosen stack
costs per request: Flask's contexts, routing and hooks, flask-smorest's
argument parsing (webargs) and response wrapper, the JSON encoding (orjson,
as the service), werkzeug's response. `bench/api_overhead.py --floor` serves
it beside the bare endpoint and the service, so that one run shows how much
of each ratio the stack itself takes.
"""

import time
import uuid

import marshmallow as ma
import orjson
from flask import Flask, abort, g, jsonify, request
from flask.json.provider import DefaultJSONProvider
from flask.views import MethodView
from flask_smorest import Api, Blueprint

RESOURCES = (
    "agents appointments channels chats contacts conversations custom-fields idle-actions "
    "intentions interactions leads mcp messages metrics permissions pipeline trainings "
    "transfer-rules users webhooks"
).split()
SCOPES = sorted(f"{resource}:{action}" for resource in RESOURCES for action in ("read", "write"))
KEY = "floor-key"
ME = {
    "key_name": "admin",
    "company_id": str(uuid.uuid4()),
    "workspace_id": str(uuid.uuid4()),
    "scopes": SCOPES,
    "permissions": {resource: ["read", "write"] for resource in RESOURCES},
}
FIELDS = [
    {
        "id": str(uuid.uuid4()),
        "company_id": ME["company_id"],
        "name": f"field {number}",
        "field_type": "text",
        "options": [],
        "is_required": False,
        "display_order": 0,
        "is_archived": False,
        "created_at": "2026-11-30T12:00:00.000000Z",
        "updated_at": "2026-11-30T12:00:00.000000Z",
    }
    for number in range(1000)
]
KEYS = {KEY: ME}  # the key's lookup: what /v1/me describes


class OrjsonProvider(DefaultJSONProvider):
    def dumps(self, obj, **kwargs):
        return orjson.dumps(obj).decode()


class Passed(ma.Schema):
    """A response schema whose dump hands the body on unchanged."""

    def dump(self, obj, *, many=None):
        return obj


class MeSchema(Passed):
    key_name = ma.fields.String()
    company_id = ma.fields.String()
    workspace_id = ma.fields.String()
    scopes = ma.fields.List(ma.fields.String())
    permissions = ma.fields.Dict(keys=ma.fields.String(), values=ma.fields.List(ma.fields.String()))


class FieldSchema(ma.Schema):
    id = ma.fields.String()
    name = ma.fields.String()


class FieldPageSchema(Passed):
    data = ma.fields.List(ma.fields.Nested(FieldSchema))


class ListQuery(ma.Schema):
    page = ma.fields.Integer(load_default=1, validate=ma.validate.Range(min=1, max=10_000))
    limit = ma.fields.Integer(validate=ma.validate.Range(min=1, max=100))
    per_page = ma.fields.Integer(validate=ma.validate.Range(min=1, max=100))
    sort = ma.fields.String(validate=ma.validate.OneOf(("created_at", "name")))
    order = ma.fields.String(validate=ma.validate.OneOf(("asc", "desc")))
    include_archived = ma.fields.Boolean(load_default=False)


app = Flask(__name__)
app.json = OrjsonProvider(app)
app.config.update(API_TITLE="floor", API_VERSION="1", OPENAPI_VERSION="3.1.0")
api = Api(app)
blp = Blueprint("floor", __name__, url_prefix="/v1")


@app.before_request
def authenticate():
    if request.path != "/":
        g.me = KEYS.get(request.headers.get("X-Api-Key")) or abort(401)


@app.after_request
def headers(response):
    response.headers["X-Request-ID"] = uuid.uuid4().hex
    response.headers["X-RateLimit-Limit"] = "100000000"
    response.headers["X-RateLimit-Remaining"] = "99999999"
    response.headers["X-RateLimit-Reset"] = str(int(time.time()) + 60)
    return response


@blp.route("/me")
class Me(MethodView):
    @blp.response(200, MeSchema())
    def get(self):
        return {"data": g.me}


@blp.route("/custom-fields")
class CustomFields(MethodView):
    @blp.arguments(ListQuery(), location="query")
    @blp.response(200, FieldPageSchema())
    def get(self, query):
        limit = query.get("limit") or query.get("per_page") or 20
        start = (query["page"] - 1) * limit
        pages = -(-len(FIELDS) // limit)
        numbers = {"page": query["page"], "total": len(FIELDS), "total_pages": pages}
        return {
            "data": FIELDS[start : start + limit],
            "pagination": {**numbers, "limit": limit},
            "meta": {**numbers, "per_page": limit},
        }


api.register_blueprint(blp)


@app.get("/")
def up():
    return jsonify({"ok": True})
