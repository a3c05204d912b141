"""api.blueprint.ApiParser: query strings loaded once are answered from
memory, and nothing about that is visible to a view or a caller."""

import marshmallow as ma
import pytest
from marshmallow import fields
from werkzeug.exceptions import BadRequest

from agent_platform.api import blueprint
from agent_platform.api.blueprint import ApiParser
from agent_platform.api.schemas.custom_fields import CustomFieldListQuery


class TagsQuery(ma.Schema):
    tag = fields.List(fields.String())


def parse(app, parser, schema, query):
    with app.test_request_context(query_string=query):
        return parser.parse(schema, location="query")


def test_a_query_string_loads_the_same_every_time_into_a_dict_of_its_own(app):
    parser, schema = ApiParser(), CustomFieldListQuery()
    first = parse(app, parser, schema, "limit=5&include_archived=true")
    first.pop("include_archived")  # as a view may
    second = parse(app, parser, schema, "limit=5&include_archived=true")
    assert second == {"include_archived": True, "paging": first["paging"]}
    assert second["paging"].limit == 5 and second is not first
    assert parse(app, parser, schema, "limit=6")["paging"].limit == 6


def test_a_refused_query_string_is_refused_every_time(app, caller):
    for _ in range(2):
        response = caller.get("/v1/custom-fields?limit=0")
        assert response.status_code == 400
        assert "limit" in response.get_json()["error"]["message"]
    parser = ApiParser()
    for _ in range(2):
        with pytest.raises(BadRequest):
            parse(app, parser, CustomFieldListQuery(), "sort=colour")


def test_schemas_taking_lists_load_every_value(app):
    parser = ApiParser()
    for _ in range(2):
        assert parse(app, parser, TagsQuery(), "tag=a&tag=b") == {"tag": ["a", "b"]}


def test_the_query_strings_kept_are_bounded(app, monkeypatch):
    monkeypatch.setattr(blueprint, "_LOADED_QUERIES_KEPT", 8)
    parser, schema = ApiParser(), CustomFieldListQuery()
    for page in range(1, 30):
        assert parse(app, parser, schema, f"page={page}")["paging"].page == page
        assert len(parser._loaded_queries) <= 8
