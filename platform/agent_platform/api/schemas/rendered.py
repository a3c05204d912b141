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


class RenderedSchema(ma.Schema):
    @staticmethod
    def render(obj):
        return obj.as_dict()

    def dump(self, obj, *, many=None):
        many = self.many if many is None else many
        if many:
            return [self.render(item) for item in obj]
        return self.render(obj)
