"""Who made a change, as recorded with it: the API key, by name and id."""

from flask import g


def actor():
    return f"{g.api_key.name} ({g.api_key.id})"
