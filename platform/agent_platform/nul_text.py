"""Outside text the service keeps rather than refuses, made storable.

PostgreSQL's text cannot hold the NUL character (U+0000), nor can its
jsonb (`\\u0000`), which the event feed and JSON filters cast documents to;
SQLite's text can. Where refusing would lose what someone else sent (a
customer's message on a network, a fetched page, a peer's answer), each NUL
is replaced by U+FFFD, on both engines alike. Replaced, not removed: U+FFFD is
what the service already keeps for bytes it cannot decode (webhook answers,
pages in an unknown charset), what HTML's parser makes of a NUL, and it never
joins the two words or ids on either side of one into a third. A request to
the API itself is refused instead (api/nul.py).
"""

NUL = "\x00"
REPLACEMENT = "\ufffd"


def holds_nul(value):
    """Whether `value` (a str, or dicts, lists and tuples of them) has a NUL
    in any string or key."""
    if isinstance(value, str):
        return NUL in value
    if isinstance(value, dict):
        return any(holds_nul(key) or holds_nul(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(map(holds_nul, value))
    return False


def nul_replaced(value):
    """`value` with every NUL of its strings and keys replaced by U+FFFD:
    `value` itself when it holds none, else a copy."""
    if not holds_nul(value):
        return value
    return _replaced(value)


def _replaced(value):
    if isinstance(value, str):
        return value.replace(NUL, REPLACEMENT)
    if isinstance(value, dict):
        return {_replaced(key): _replaced(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_replaced(item) for item in value)
    return value
