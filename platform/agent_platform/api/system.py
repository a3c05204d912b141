"""System: health check and API key introspection."""

from flask import current_app, g
from flask.views import MethodView

from ..services import keys, system
from .blueprint import ApiBlueprint
from .schemas.system import HealthSchema, KeyInfoSchema

blp = ApiBlueprint("system", __name__, url_prefix="", description="Health and key introspection.")


@blp.route("/health")
class Health(MethodView):
    @blp.public
    @blp.response(200, HealthSchema)
    @blp.alt_response(
        503, schema=HealthSchema, description="Maintenance, or degraded (reason says why)"
    )
    def get(self):
        """Check that the service works (no key needed)"""
        status, timestamp, reason = system.health(current_app.config["MAINTENANCE"])
        body = {"status": status, "timestamp": timestamp}
        if reason:
            body["reason"] = reason
        return body, 200 if status == "ok" else 503


@blp.route("/me")
class Me(MethodView):
    @blp.scope("*")
    @blp.response(200, KeyInfoSchema)
    def get(self):
        """Describe the API key used for this request"""
        return keys.describe_key(g.api_key)
