"""One way to page through any query: stable order, total, and the page."""

import math
from dataclasses import dataclass

from peewee import Star

from . import fastsql


@dataclass(frozen=True)
class PageRequest:
    page: int
    limit: int
    order: str  # "asc" | "desc"
    sort: str  # a column name the listing allows


@dataclass
class Page:
    items: list
    request: PageRequest
    total: int

    @property
    def total_pages(self):
        return math.ceil(self.total / self.request.limit)


def paginate(query, model, paging):
    """The requested page of `query` (a peewee query selecting `model`'s
    columns, or a fastsql.Listing); ties on the sort column break by id.

    The statement is built by peewee once and then counted and paged by
    SQLite, which flattens the subqueries (the indexes still serve the
    order): building a peewee query costs more than running it, and most of
    that is spelling out the columns, hence `table.*`.
    """
    if isinstance(query, fastsql.Listing):
        sql, params = query.sql()
    else:
        sql, params = query.select(Star(model)).order_by().sql()
    direction = "ASC" if paging.order == "asc" else "DESC"
    column = getattr(model, paging.sort).column_name
    page_sql = (
        f'SELECT * FROM ({sql}) ORDER BY "{column}" {direction}, "id" {direction} LIMIT ? OFFSET ?'
    )
    offset = (paging.page - 1) * paging.limit
    items = fastsql.fetch_all(model, page_sql, *params, paging.limit, offset)
    if 0 < len(items) < paging.limit or (not items and offset == 0):
        # The last page (or no rows at all) tells the total without counting.
        return Page(items, paging, offset + len(items))
    return Page(items, paging, fastsql.scalar(f"SELECT COUNT(*) FROM ({sql})", *params))
