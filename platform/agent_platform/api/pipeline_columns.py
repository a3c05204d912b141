"""The sales pipeline's columns and its summary figures (not api/pipeline.py,
which is the request pipeline)."""

from flask import Response, g
from flask.views import MethodView

from ..services import opportunities, pipeline_columns
from .actor import actor
from .blueprint import ApiBlueprint
from .pagination import paginated
from .schemas.opportunities import (
    ColumnCreateSchema,
    ColumnListQuery,
    ColumnSchema,
    ColumnUpdateSchema,
    DeleteColumnQuery,
    ReorderSchema,
    SummarySchema,
)

blp = ApiBlueprint(
    "pipeline",
    __name__,
    url_prefix="/pipeline",
    description="The sales pipeline: ordered columns, each open, won or lost.",
)


@blp.route("/columns")
class Columns(MethodView):
    @blp.scope("pipeline:read")
    @blp.arguments(ColumnListQuery, location="query")
    @blp.response(200, paginated(ColumnSchema))
    @blp.errors(400)
    def get(self, query):
        """List pipeline columns, in order"""
        return pipeline_columns.list_columns(g.workspace_id, **query)

    @blp.scope("pipeline:write")
    @blp.arguments(ColumnCreateSchema)
    @blp.response(201, ColumnSchema)
    @blp.errors(400, 409)
    def post(self, values):
        """Add a column after the last one"""
        return pipeline_columns.create_column(g.workspace_id, values)


@blp.route("/columns/order")
class ColumnOrder(MethodView):
    @blp.scope("pipeline:write")
    @blp.arguments(ReorderSchema)
    @blp.response(200, ColumnSchema(many=True))
    @blp.errors(400)
    def put(self, values):
        """Reorder every column in one call"""
        return pipeline_columns.reorder(g.workspace_id, values["column_ids"])


@blp.route("/columns/<column_id>")
class ColumnById(MethodView):
    @blp.scope("pipeline:read")
    @blp.response(200, ColumnSchema)
    @blp.errors(404)
    def get(self, column_id):
        """Get a pipeline column"""
        return pipeline_columns.get_column(g.workspace_id, column_id)

    @blp.scope("pipeline:write")
    @blp.arguments(ColumnUpdateSchema)
    @blp.response(200, ColumnSchema)
    @blp.errors(400, 404, 409)
    def patch(self, changes, column_id):
        """Rename a column, or change its probability or (when empty) its kind"""
        return pipeline_columns.update_column(g.workspace_id, column_id, changes)

    @blp.scope("pipeline:write")
    @blp.arguments(DeleteColumnQuery, location="query")
    @blp.response(204)
    @blp.errors(400, 404, 409)
    def delete(self, query, column_id):
        """Delete a column; one holding opportunities needs move_to (else 409)"""
        opportunities.delete_column(g.workspace_id, column_id, query.get("move_to"), actor())
        return Response(status=204)


@blp.route("/summary")
class Summary(MethodView):
    @blp.scope("pipeline:read")
    @blp.response(200, SummarySchema)
    def get(self):
        """Count, value and weighted forecast per column and currency"""
        return opportunities.summary(g.workspace_id)
