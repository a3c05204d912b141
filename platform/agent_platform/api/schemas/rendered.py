"""Schemas of objects that render themselves.

Channels, contacts, conversations and messages have one JSON form, built by
the object itself (`as_dict`) and shared with the events they raise. The
schema's fields document that form for OpenAPI; dumping returns the object's
own dict instead of serialising field by field, which costs twenty times
more on a page of 50 messages. Its times are left to the JSON encoder
(api/json.py writes them as UtcDateTime does). A test checks that the
documented fields are exactly the rendered keys.
"""

import marshmallow as ma

from ...models.streamed import Streamed


class RenderedSchema(ma.Schema):
    @staticmethod
    def render(obj):
        return obj.as_dict()

    def dump(self, obj, *, many=None):
        many = self.many if many is None else many
        return rendered_items(obj, self.render) if many else self.render(obj)


def rendered_items(items, render):
    """Each item rendered: now, or as a Streamed reads it."""
    if isinstance(items, Streamed):
        return items.mapped(render)
    return [render(item) for item in items]
