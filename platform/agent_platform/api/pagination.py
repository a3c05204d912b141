"""Query parameters and response body shared by every listing.

Both pagination variants of the spec are served at once: `limit` or its
alias `per_page` in the query, and `pagination` plus `meta` in the body.
"""

from functools import cache

import marshmallow as ma
from marshmallow import fields, post_load, validate, validates_schema

from ..models.pagination import PageRequest
from ..models.sqljson import RawJson
from .schemas.common import Bare, BareSchema
from .schemas.rendered import RenderedSchema, rendered_items

MAX_LIMIT = 100
# 100 items a page: a hundred million items, and every offset an SQLite integer.
MAX_PAGE = 1_000_000
DEFAULT_LIMIT = 20


class ListQuery(ma.Schema):
    """Subclass per listing: set SORT_FIELDS (first is the default) and add filters.

    Every listing defaults to descending order (the spec's default): newest
    first, as the first sort field is the creation or last-change time.
    The loaded dict holds the filters plus `paging`, a PageRequest.
    """

    SORT_FIELDS = ("created_at",)

    page = fields.Integer(
        load_default=1,
        validate=validate.Range(min=1, max=MAX_PAGE),
        metadata={"description": f"Page number, 1 to {MAX_PAGE:,}"},
    )
    limit = fields.Integer(
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": f"Items per page, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})"},
    )
    per_page = fields.Integer(
        validate=validate.Range(min=1, max=MAX_LIMIT),
        metadata={"description": "Alias of limit"},
    )
    order = fields.String(
        validate=validate.OneOf(("asc", "desc")),
        metadata={"description": "asc or desc (default desc: newest first)", "default": "desc"},
    )
    sort = fields.String(metadata={"description": "Field to sort by"})

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Each listing's own choices, on its instance's field: checked on
        # load and documented as the parameter's enum.
        sort = self.fields["sort"]
        sort.validators = [validate.OneOf(self.SORT_FIELDS)]
        sort.metadata = {"description": "Field to sort by", "default": self.SORT_FIELDS[0]}

    @validates_schema
    def check_alias(self, data, **kwargs):
        if "limit" in data and "per_page" in data and data["limit"] != data["per_page"]:
            raise ma.ValidationError(
                "Give limit or per_page, not two different values.", "per_page"
            )

    @post_load
    def make_page_request(self, data, **kwargs):
        limit = data.pop("limit", None) or data.pop("per_page", None) or DEFAULT_LIMIT
        data.pop("per_page", None)
        data["paging"] = PageRequest(
            page=data.pop("page"),
            limit=limit,
            order=data.pop("order", "desc"),
            sort=data.pop("sort", self.SORT_FIELDS[0]),
        )
        return data


# Response fields always present are `required` in the document, so that
# generated clients type them as given rather than possibly unset.
class PaginationSchema(ma.Schema):
    page = fields.Integer(required=True)
    limit = fields.Integer(required=True)
    total = fields.Integer(required=True)
    total_pages = fields.Integer(required=True)


class MetaSchema(ma.Schema):
    page = fields.Integer(required=True)
    per_page = fields.Integer(required=True)
    total = fields.Integer(required=True)
    total_pages = fields.Integer(required=True)


def _numbers(page, limit_name):
    return {
        "page": page.request.page,
        limit_name: page.request.limit,
        "total": page.total,
        "total_pages": page.total_pages,
    }


class PageBodySchema(BareSchema):
    """Dumps a models.pagination.Page; subclasses add `data`."""

    pagination = fields.Nested(PaginationSchema, required=True)
    meta = fields.Nested(MetaSchema, required=True)

    def get_attribute(self, obj, attr, default):
        if attr == "pagination":
            return _numbers(obj, "limit")
        if attr == "meta":
            return _numbers(obj, "per_page")
        return super().get_attribute(obj, attr, default)


class RenderedPageBodySchema(PageBodySchema):
    """A page of objects that render themselves (RenderedSchema): the body is
    built directly, without marshmallow walking a field per item."""

    ITEM_SCHEMA = RenderedSchema

    def dump(self, page, *, many=None):
        items, render = page.items, self.ITEM_SCHEMA.render
        return Bare(
            data=items if isinstance(items, RawJson) else rendered_items(items, render),
            pagination=_numbers(page, "limit"),
            meta=_numbers(page, "per_page"),
        )


@cache
def paginated(item_schema):
    """The list body for `item_schema` (a class): data, pagination and meta."""
    name = item_schema.__name__.removesuffix("Schema") + "PageSchema"
    data = fields.List(fields.Nested(item_schema), attribute="items", required=True)
    if issubclass(item_schema, RenderedSchema):
        return type(name, (RenderedPageBodySchema,), {"data": data, "ITEM_SCHEMA": item_schema})
    return type(name, (PageBodySchema,), {"data": data})
