"""The Blueprint every resource uses: scopes, error docs, the data envelope."""

import http
import re
from contextlib import suppress
from copy import deepcopy
from datetime import date, datetime
from functools import cache
from uuid import UUID

import marshmallow as ma
from flask import request
from flask_smorest import Blueprint
from marshmallow import fields
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from ..errors import ValidationError
from ..models.pagination import PageRequest
from ..scopes import SCOPES
from .json_bodies import read_json, refuse_other_media
from .operation_ids import operation_id
from .schemas.common import Bare, BareSchema

# Errors any authenticated operation can answer, documented on every one
# (503: the database cannot take writes, a full or read-only disk).
AUTH_ERRORS = (401, 403, 413, 429, 500, 503)
# The "scope" of operations any valid key may call (GET /v1/me).
ANY_SCOPE = "*"
# The two ways a key is presented (securitySchemes of the OpenAPI document).
_SCHEMES = ("ApiKeyHeader", "BearerAuth")


class ApiParser(FlaskParser):
    DEFAULT_VALIDATION_STATUS = 400

    def __init__(self):
        # unknown=None lets each schema decide (marshmallow's default is RAISE),
        # so a misspelt query parameter or body field is an error, not ignored.
        super().__init__(unknown=None)
        self._loaded_queries = {}

    def get_default_request(self):
        # The request itself: every use of the proxy looks up the context again.
        return request._get_current_object()

    def parse(self, argmap, req=None, *, location=None, validate=None, **options):
        """As webargs parses, but a query string already loaded by the same
        schema is answered from memory: loading one through marshmallow costs
        more than many whole requests' SQL, and the same few query strings
        (`?limit=20`) come again and again. Only successful loads of plain
        values are kept (nothing in them can be changed by the view), never
        errors, and a schema's load depends on nothing but the text."""
        cacheable = location == "query" and validate is None and not _takes_lists(type(argmap))
        if not cacheable:
            return super().parse(argmap, req, location=location, validate=validate, **options)
        req = req if req is not None else self.get_default_request()
        key = (argmap, req.query_string)
        loaded = self._loaded_queries.get(key)
        if loaded is None:
            loaded = super().parse(argmap, req, location=location, **options)
            if all(type(value) in _IMMUTABLE for value in loaded.values()):
                if len(self._loaded_queries) >= _LOADED_QUERIES_KEPT:
                    self._loaded_queries.clear()
                self._loaded_queries[key] = loaded
        return dict(loaded)

    def load_json_or_form(self, req, schema):
        # A form (a document's upload) is read as one, anything else as JSON.
        if req.mimetype in _FORM_TYPES:
            return self.load_form(req, schema)
        refuse_other_media(req, "application/json, or multipart/form-data")
        return self.load_json(req, schema)

    def _raw_load_json(self, req):
        # As webargs reads it, with the nesting and Unicode limits of jsonbody.
        if not is_json_request(req):
            refuse_other_media(req, "application/json")
            return _nothing_to_change(req)
        try:
            loaded = read_json(req.get_data(cache=True))
        except ValueError as error:  # not JSON, or not UTF-8
            self._handle_invalid_json_error(error, req)
        return loaded if loaded != {} else _nothing_to_change(req, loaded)

    def load_querystring(self, req, schema):
        _refuse_repeats(req.args, type(schema))
        # webargs wraps the arguments in a proxy that looks for the schema's
        # list fields on every request; without any, a plain dict of the first
        # values reads the same.
        if _takes_lists(type(schema)):
            return super().load_querystring(req, schema)
        return req.args.to_dict()

    def pre_load(self, location_data, *, schema, req, location):
        # A query string is text: its integers are read here, for Integer
        # fields that take nothing but ints (_hold_integers_strictly).
        if location != "query":
            return location_data
        integers = _integer_parameters(type(schema)) & location_data.keys()
        if not integers:
            return location_data
        data = dict(location_data)
        for name in integers:
            data[name] = _integer_from_text(data[name])
        return data


_BODY_LOCATIONS = ("json", "json_or_form")
_FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")
# An integer written in a query string: ASCII digits, perhaps after a "-"
# (int() also takes other scripts' digits, "1_0", " 1" and "+1").
_INTEGER_TEXT = re.compile(r"-?[0-9]+")


def _refuse_repeats(args, schema_class):
    """A parameter of one value given twice is refused, as an unknown one is
    (by marshmallow): taking the first would silently ignore the other."""
    single = _single_valued(schema_class)
    repeated = {
        name: [f"Give one value, not {len(values)}."]
        for name, values in args.lists()
        if len(values) > 1 and name in single
    }
    if repeated:
        raise ma.ValidationError(repeated)


def _integer_from_text(text):
    """`text` as an int when it is written as one (_INTEGER_TEXT), else
    unchanged, for its strict field to refuse."""
    if _INTEGER_TEXT.fullmatch(text):
        with suppress(ValueError):  # past int()'s 4,300 digits
            return int(text)
    return text


def _nothing_to_change(req, loaded=core.missing):
    """A PATCH changes something: no body, or {}, is a client's mistake."""
    if req.method == "PATCH":
        raise ValidationError("body", "send a JSON object with at least one field to change")
    return loaded


class ApiBlueprint(Blueprint):
    ARGUMENTS_PARSER = ApiParser()

    def scope(self, name, *also, plus=()):
        """Declare the scope an operation needs; the request pipeline enforces it.

        `also` names the scopes the spec's variant listing lets stand in for
        it (`agents:write` also covers deleting agents): any one of them will do.
        `plus` names scopes needed as well, for an operation that writes what
        another scope guards (converting a lead creates an opportunity).
        """
        accepted = (name, *also)
        for scope in (*accepted, *plus):
            if scope not in SCOPES and scope != ANY_SCOPE:
                raise ValueError(f"unknown scope {scope}")
        if name == ANY_SCOPE:
            needs, security = "any valid API key", [{"ApiKeyHeader": []}, {"BearerAuth": []}]
        else:
            needs = " or ".join(f"scope `{scope}`" for scope in accepted)
            needs += "".join(f" and scope `{scope}`" for scope in plus)
            security = [{scheme: [scope, *plus]} for scope in accepted for scheme in _SCHEMES]

        def decorator(func):
            func = self.errors(*AUTH_ERRORS)(func)
            func._required_scope = name
            func._accepted_scopes = accepted
            func._also_required_scopes = tuple(plus)
            _add_doc(func, security=security, description=f"Requires {needs}.")
            func._apidoc["manual_doc"]["x-required-scope"] = name
            if also:
                func._apidoc["manual_doc"]["x-accepted-scopes"] = list(accepted)
            if plus:
                func._apidoc["manual_doc"]["x-also-required-scopes"] = list(plus)
            return func

        return decorator

    def public(self, func):
        """Mark an operation that needs no API key (health, inbound callbacks)."""
        func._public = True
        _add_doc(func, security=[])
        return func

    def errors(self, *statuses):
        """Document error responses, in the shared error body.

        What `alt_response` records, without the wrapper it adds around the
        view for each status (a call per layer on every request)."""

        def decorator(func):
            func._apidoc = deepcopy(getattr(func, "_apidoc", {}))
            responses = func._apidoc.setdefault("response", {}).setdefault("responses", {})
            for status in statuses:
                responses.setdefault(status, []).append(http.HTTPStatus(status).name)
            return func

        return decorator

    def register_views_in_doc(self, api, app, spec, *, name, parameters):
        # Every operation gets its operationId here, where blueprint, view and
        # method are known (an explicit @blp.doc(operationId=...) stays).
        for endpoint, methods in self._docs.items():
            for method, doc in methods.items():
                if method != "parameters":
                    manual = doc.setdefault("manual_doc", {})
                    manual.setdefault("operationId", operation_id(name, endpoint, method))
        return super().register_views_in_doc(api, app, spec, name=name, parameters=parameters)

    def arguments(self, schema, **kwargs):
        # webargs instantiates a schema given as a class on every request.
        schema = _instance(schema)
        _hold_integers_strictly(schema)
        decorator = super().arguments(schema, **kwargs)
        if kwargs.get("location", "json") not in _BODY_LOCATIONS:
            return decorator
        return lambda func: self.errors(415)(decorator(func))  # see refuse_other_media

    def response(self, status_code, schema=None, **kwargs):
        return super().response(status_code, _instance(schema), **kwargs)

    def _prepare_arguments_doc(self, doc, doc_info, *, method, **kwargs):
        doc = super()._prepare_arguments_doc(doc, doc_info, method=method, **kwargs)
        if method == "patch":
            # Documents what _nothing_to_change enforces: a PATCH changes something.
            for content in doc.get("requestBody", {}).get("content", {}).values():
                content["schema"] = {"allOf": [content["schema"]], "minProperties": 1}
        return doc

    @staticmethod
    def _prepare_response_content(data):
        if isinstance(data, Bare):
            return data
        return {"data": data}

    @staticmethod
    def _make_doc_response_schema(schema):
        if schema is None or isinstance(schema, BareSchema):
            return schema
        return _data_envelope(type(schema), schema.many)


# Loaded query strings kept (all forgotten at once when full: a flood of
# distinct strings must not grow memory, and the common ones return at once).
_LOADED_QUERIES_KEPT = 1024
_IMMUTABLE = frozenset((int, float, bool, str, type(None), PageRequest, datetime, date, UUID))


@cache
def _takes_lists(schema_class):
    declared = schema_class._declared_fields.values()
    return any(isinstance(field, fields.List | fields.Tuple) for field in declared)


@cache
def _single_valued(schema_class):
    """The query names of a schema's parameters that take one value."""
    declared = schema_class._declared_fields.items()
    multiple = fields.List | fields.Tuple
    return {field.data_key or name for name, field in declared if not isinstance(field, multiple)}


@cache
def _integer_parameters(schema_class):
    """The query names of a schema's Integer parameters."""
    declared = schema_class._declared_fields.items()
    return {field.data_key or name for name, field in declared if isinstance(field, fields.Integer)}


def _hold_integers_strictly(schema):
    """Make every Integer of `schema`, nested ones too, take an int and
    nothing else, as the document types it `integer`: marshmallow's default
    casts with int(), and so read 1.5 as 1, "5" as 5 and 1e-400 as 0. A
    JSON 5.0 is refused too, as a float (ApiParser.pre_load reads a query
    string's integers before the fields see them)."""
    for field in schema.fields.values():
        _hold_strictly(field)


def _hold_strictly(field):
    if isinstance(field, fields.Integer):
        field.strict = True
    elif isinstance(field, fields.Nested):
        _hold_integers_strictly(field.schema)
    elif isinstance(field, fields.List):
        _hold_strictly(field.inner)


def _instance(schema):
    """A schema given as a class, as the one instance every operation using
    it shares (the class's fields are copied into each instance: 0.7 MB)."""
    return _shared_instance(schema) if isinstance(schema, type) else schema


@cache
def _shared_instance(schema_class):
    return schema_class()


@cache
def _data_envelope(schema_class, many):
    """The documented {"data": ...} wrapper of a schema (the body views send)."""
    name = "Data" + schema_class.__name__ + ("List" if many else "")
    data = fields.Nested(schema_class, many=many, required=True)  # always there
    return type(name, (ma.Schema,), {"data": data})


def _add_doc(func, **doc):
    func._apidoc = deepcopy(getattr(func, "_apidoc", {}))
    manual = func._apidoc.setdefault("manual_doc", {})
    manual.update(doc)
