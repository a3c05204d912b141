"""One way to page through any query: stable order, total, and the page."""

import math
from dataclasses import dataclass

from peewee import Star

from . import fastsql
from .counts import counted_sql


@dataclass(frozen=True)
class PageRequest:
    page: int
    limit: int
    order: str  # "asc" | "desc"
    sort: str  # a column name the listing allows


@dataclass
class Page:
    items: list  # or a sqljson.RawJson: the page's JSON array, written by SQLite
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
    form = None
    if isinstance(query, fastsql.Listing):
        sql, params = query.sql()
        form = query.form
    else:
        sql, params = query.select(Star(model)).order_by().sql()
    direction = "ASC" if paging.order == "asc" else "DESC"
    column = getattr(model, paging.sort).column_name
    order = f'ORDER BY "{column}" {direction}, "id" {direction} LIMIT ? OFFSET ?'
    offset = (paging.page - 1) * paging.limit
    page_params = (*params, paging.limit, offset)
    if form is None:
        items = fastsql.fetch_all(model, f"SELECT * FROM ({sql}) {order}", *page_params)
        count = len(items)
    else:
        page_sql = f"SELECT {form.expression} FROM ({sql}) {order}"
        rows = fastsql.execute(page_sql, *form.params, *page_params).fetchall()
        items, count = form.read(rows), len(rows)
    if 0 < count < paging.limit or (not count and offset == 0):
        # The last page (or no rows at all) tells the total without counting.
        return Page(items, paging, offset + count)
    total_sql, total_params = _total_sql(query, sql, params)
    return Page(items, paging, fastsql.scalar(total_sql, *total_params))


def _total_sql(query, sql, params):
    """SQL and parameters of the listing's total: from the counts the database
    keeps when they tell it (models/counts.py), else COUNT(*)."""
    kept = counted_sql(query.model, query.equal) if isinstance(query, fastsql.Listing) else None
    return kept or (f"SELECT COUNT(*) FROM ({sql})", params)
