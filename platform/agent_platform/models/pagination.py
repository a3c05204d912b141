"""One way to page through any query: stable order, total, and the page."""

import math
from dataclasses import dataclass


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
    """The requested page of `query`; ties on the sort column break by id."""
    column = getattr(model, paging.sort)
    if paging.order == "asc":
        ordering = (column.asc(), model.id.asc())
    else:
        ordering = (column.desc(), model.id.desc())
    total = query.order_by().count()
    items = list(query.order_by(*ordering).paginate(paging.page, paging.limit))
    return Page(items, paging, total)
