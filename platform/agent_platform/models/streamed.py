"""Items read one at a time, while the answer that shows them is written."""

from .fastsql import fetch_one


class Streamed:
    """The items of an answer, each read when the answer reaches it.

    A page of trainings may show texts of millions of characters each:
    read and encoded whole, one page held hundreds of MB and kept the
    server's loop for a second. The API writes such items one by one
    (api/json.py). It can be iterated once.
    """

    def __init__(self, items):
        self._items = items

    def __iter__(self):
        return iter(self._items)

    def mapped(self, function):
        """The items as `function` turns them, still read one at a time."""
        return Streamed(map(function, self._items))


def leading_fields(model, rest):
    """`model`'s fields but those of the columns `rest`: what a page reads
    at once, before with_the_rest reads the others."""
    return [field for field in model._meta.sorted_fields if field.column_name not in rest]


def with_the_rest(model, items, rest):
    """`items`, `model` instances read without their columns `rest`, as a
    Streamed that reads those of each (by its id) when the answer reaches
    it, and lets them go once it is written (the caller's list holds them
    all). One deleted meanwhile is left out: it no longer exists."""
    columns = ", ".join(f'"{name}"' for name in rest)
    sql = f'SELECT {columns} FROM "{model._meta.table_name}" WHERE "id" = ?'
    return Streamed(_with_the_rest(model, items, sql))


def _with_the_rest(model, items, sql):
    for item in items:
        rest = fetch_one(model, sql, item.id)
        if rest is not None:
            item.__data__.update(rest.__data__)
            yield item
            item.__data__.update(dict.fromkeys(rest.__data__))
