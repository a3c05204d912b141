"""Items read one at a time, while the answer that shows them is written."""


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
