"""What the admins' pages share: a form read through the API's own
marshmallow schema (so a person sees the API's validation messages, in
words), and the one-line notice a page shows after a POST redirected to it
(a fixed sentence chosen by a key in the query string, never text from it)."""

import marshmallow
from flask import request

from ..errors import ValidationError

SEE_OTHER = 303


def load(schema, values):
    """`values` loaded by `schema`, or ValidationError naming each field."""
    try:
        return schema.load(values)
    except marshmallow.ValidationError as error:
        problems = error.normalized_messages()
        field = sorted(problems)[0]
        text = "; ".join(f"{name}: {_words(problems[name])}" for name in sorted(problems))
        raise ValidationError(field, text.partition(": ")[2]) from None


def _words(problem):
    if isinstance(problem, dict):
        return " ".join(_words(value) for value in problem.values())
    if isinstance(problem, list):
        return " ".join(_words(value) for value in problem)
    return str(problem)


def filled(names):
    """The form's non-empty fields among `names`, stripped of outer spaces."""
    found = {name: request.form.get(name, "").strip() for name in names}
    return {name: value for name, value in found.items() if value}


def notice(sentences):
    """The sentence of `?done=` among `sentences`, or None."""
    return sentences.get(request.args.get("done", ""))
