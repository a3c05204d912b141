"""Pipeline columns: named, ordered, per workspace, each with a win
probability and a kind (open, won, lost)."""

from .. import formats
from ..db import transaction
from ..errors import Conflict, NotFound, ValidationError
from ..events import emit
from ..models import Opportunity, PipelineColumn, fastsql
from ..models.base import utcnow
from ..models.pagination import paginate

MAX_COLUMNS = 50


def not_found(column_id):
    return NotFound(f"Pipeline column {column_id} not found.", code="PIPELINE_COLUMN_NOT_FOUND")


def get_column(workspace_id, column_id):
    return PipelineColumn.get_in_workspace(workspace_id, column_id, not_found(column_id))


def render(column):
    return formats.jsonable(column.as_dict())


def list_columns(workspace_id, paging):
    return paginate(PipelineColumn.in_workspace(workspace_id), PipelineColumn, paging)


def first_open_column(workspace_id):
    opened = [c for c in PipelineColumn.ordered(workspace_id) if c.kind == "open"]
    return opened[0] if opened else None


def create_column(workspace_id, values, now=None):
    """Added after the last column (reorder to place it elsewhere)."""
    now = now or utcnow()
    with transaction():
        columns = PipelineColumn.ordered(workspace_id)
        if len(columns) >= MAX_COLUMNS:
            raise Conflict(
                f"The pipeline has {MAX_COLUMNS} columns, the most it may have.",
                code="PIPELINE_FULL",
            )
        position = columns[-1].position + 1 if columns else 0
        column = PipelineColumn(workspace=workspace_id, position=position, **values)
        column.created_at = column.updated_at = now
        column.save(force_insert=True)
        emit(workspace_id, "pipeline_column.created", render(column), now=now)
        return column


def update_column(workspace_id, column_id, changes, now=None):
    """Name and probability change freely; the kind only of an empty column
    (its opportunities' won or lost follows the kind)."""
    now = now or utcnow()
    with transaction():
        column = get_column(workspace_id, column_id)
        if changes.get("kind", column.kind) != column.kind and Opportunity.count_in(column.id):
            raise Conflict(
                f"Pipeline column {column.id} holds opportunities: move them before "
                "changing its kind.",
                code="PIPELINE_COLUMN_NOT_EMPTY",
            )
        for name, value in changes.items():
            setattr(column, name, value)
        column.updated_at = now
        column.save(keep_updated_at=True)
        emit(workspace_id, "pipeline_column.updated", render(column), now=now)
        return column


def reorder(workspace_id, column_ids, now=None):
    """Every column of the workspace, each once, in the new order."""
    now = now or utcnow()
    with transaction():
        columns = {column.id: column for column in PipelineColumn.ordered(workspace_id)}
        given = [str(column_id) for column_id in column_ids]
        if len(set(given)) != len(given) or set(given) != set(columns):
            raise ValidationError("column_ids", "must list every column of the pipeline, each once")
        for position, column_id in enumerate(given):
            fastsql.execute(
                'UPDATE "pipeline_column" SET "position" = ?, "updated_at" = ? WHERE "id" = ?',
                position, now, column_id,
            )  # fmt: skip
        ordered = PipelineColumn.ordered(workspace_id)
        emit(workspace_id, "pipeline.reordered", {"column_ids": [c.id for c in ordered]}, now=now)
        return ordered
