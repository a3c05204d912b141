"""GET /metrics: the caller's workspace in Prometheus's text format."""

from flask import Response, g
from flask.views import MethodView

from ..services import metrics
from .blueprint import ApiBlueprint

blp = ApiBlueprint(
    "metrics",
    __name__,
    url_prefix="",
    description="Prometheus metrics of the key's workspace (docs/operations.md#metrics).",
)

EXPOSITION = {
    "description": "Prometheus text exposition format 0.0.4: the workspace's counters, "
    "queue depths and reply latency histogram, each under its `workspace` label",
    "content": {"text/plain": {"schema": {"type": "string"}}},
}


@blp.route("/metrics")
class Metrics(MethodView):
    @blp.scope("metrics:read")
    @blp.response(200)
    @blp.doc(responses={"200": EXPOSITION})
    def get(self):
        """Metrics of the key's workspace, for Prometheus to scrape"""
        body, content_type = metrics.exposition(g.workspace_id)
        return Response(body, content_type=content_type)
