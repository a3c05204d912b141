"""One way to page through any query: stable order, total, and the page."""

import math
import threading
from dataclasses import dataclass

from peewee import Star

from ..db import database
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
    # Or a sqljson.RawJson (the page's JSON array, written by SQLite), or a
    # streamed.Streamed (items read as the page is written).
    items: list
    request: PageRequest
    total: int

    @property
    def total_pages(self):
        return math.ceil(self.total / self.request.limit)


def paginate(query, model, paging, columns=None):
    """The requested page of `query` (a peewee query selecting `model`'s
    columns, or only `columns` of them; or a fastsql.Listing); ties on the
    sort column break by id.

    The statement is built by peewee once and then counted and paged by
    SQLite, which flattens the subqueries (the indexes still serve the
    order): building a peewee query costs more than running it, and most of
    that is spelling out the columns, hence `table.*`. A page SQLite renders
    (`Listing.rendered`, of rows models/counts.py counts) is kept in memory
    while their version stands.
    """
    form = None
    if isinstance(query, fastsql.Listing):
        sql, params = query.sql()
        form = query.form
    else:
        sql, params = query.select(*(columns or [Star(model)])).order_by().sql()
    direction = "ASC" if paging.order == "asc" else "DESC"
    column = getattr(model, paging.sort).column_name
    order = f'ORDER BY "{column}" {direction}, "id" {direction} LIMIT ? OFFSET ?'
    offset = (paging.page - 1) * paging.limit
    page_params = (*params, paging.limit, offset)
    if form is not None:
        page_statement = (
            f'SELECT {form.expression} FROM ({sql}) AS "listed" {order}',
            (*form.params, *page_params),
        )
        return _versioned_page(page_statement, counted_sql(model, query.equal), form, paging)
    # The subqueries are named: PostgreSQL (before 16) requires it.
    items = fastsql.fetch_all(model, f'SELECT * FROM ({sql}) AS "listed" {order}', *page_params)
    count = len(items)
    if 0 < count < paging.limit or (not count and offset == 0):
        # The last page (or no rows at all) tells the total without counting.
        return Page(items, paging, offset + count)
    return Page(items, paging, fastsql.scalar(f'SELECT COUNT(*) FROM ({sql}) AS "listed"', *params))


def _versioned_page(page_statement, counts, form, paging):
    """The page of a counted, rendered listing: the one rendered before when
    the version of its rows still stands, else rendered now and kept.

    A hit costs one read of row_count instead of the page's SQL (most of a
    page's cost). The page is rendered in the same snapshot as the version
    it is kept under, so a page is never kept under a version it does not
    show; a page read inside a transaction is neither served nor kept. Each
    process keeps its own pages; the versions are in the database, so a
    change made by any process or the CLI is seen at once.
    """
    (page_sql, page_params), (counts_sql, counts_params) = page_statement, counts
    if database.connection_in_transaction():
        # It may see changes of its own that are rolled back later, and the
        # version they moved to would then be reached again by other rows.
        total = _counts(counts_sql, counts_params)[0]
        return Page(form.read(fastsql.execute(page_sql, *page_params).fetchall()), paging, total)
    # The database file is part of the key: the versions of two files can meet.
    key = (database.database, page_sql, page_params)
    total, version = _counts(counts_sql, counts_params)
    items = RENDERED_PAGES.get(key, version)
    if items is None:
        with database.atomic("DEFERRED"):
            total, version = _counts(counts_sql, counts_params)
            items = form.read(fastsql.execute(page_sql, *page_params).fetchall())
        RENDERED_PAGES.keep(key, version, items)
    return Page(items, paging, total)


def _counts(sql, params):
    """(total, version) from row_count: integers (PostgreSQL sums a BIGINT
    column as a NUMERIC, which psycopg reads as a Decimal). Read apart, so
    that a page kept takes no pooled connection; inside a transaction, on
    the thread's own connection (fastsql.read_apart)."""
    total, version = fastsql.read_apart(sql, *params)[1][0]
    return int(total), int(version)


class RenderedPages:
    """Pages rendered by SQLite (sqljson.RawJson), by statement and the
    version of the rows they show. Bounded by the characters kept: when a
    new page would pass `max_chars`, every page is forgotten at once (a
    miss only costs a rendering)."""

    def __init__(self, max_chars):
        self.max_chars = max_chars
        self._pages = {}  # statement and parameters -> (version, RawJson)
        self._chars = 0
        self._lock = threading.Lock()

    def get(self, key, version):
        kept = self._pages.get(key)
        return kept[1] if kept is not None and kept[0] == version else None

    def keep(self, key, version, items):
        with self._lock:
            replaced = self._pages.pop(key, None)
            if replaced is not None:
                self._chars -= len(replaced[1].text)
            if self._chars + len(items.text) > self.max_chars:
                self._pages.clear()
                self._chars = 0
            self._pages[key] = (version, items)
            self._chars += len(items.text)


# 100 full pages of 100 rows of about 400 characters: a few MB at most.
RENDERED_PAGES = RenderedPages(max_chars=4_000_000)
