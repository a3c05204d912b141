"""Trainings: what each type needs, fetching pages, reading uploaded files,
and searching an agent's knowledge.

The search index follows the table by itself (triggers, see models/trainings.py),
so nothing here has to remember to update it.
"""

import hashlib
from pathlib import PurePosixPath

import requests
from flask import current_app

from .. import formats, netguard
from ..db import transaction
from ..errors import NotFound, ValidationError
from ..models import Training
from ..models.base import utcnow
from ..models.pagination import paginate
from ..models.trainings import MAX_TITLE
from . import agents, idempotency
from .knowledge_text import decode_text, html_to_text, looks_binary

# The fields each type is made of (and the only ones PATCH may change).
FIELDS = {
    "text": ("title", "content"),
    "qa": ("question", "answer"),
    "url": ("url", "title"),
    "document": ("title",),
}
REQUIRED = {"text": ("content",), "qa": ("question", "answer"), "url": ("url",), "document": ()}
DOCUMENT_SUFFIXES = {".txt": "text", ".md": "text", ".markdown": "text", ".csv": "text"}
DOCUMENT_SUFFIXES.update({".html": "html", ".htm": "html"})
# The setting that lets URL trainings reach private addresses and any port.
PRIVATE_URLS_SETTING = "trainings.allow_private_urls"
HTML_TYPES = ("text/html", "application/xhtml+xml")
TEXT_TYPES = ("text/plain", "text/markdown", "text/csv")
SEARCH_DEFAULT_LIMIT = 10


def not_found(training_id):
    return NotFound(f"Training {training_id} not found.", code="TRAINING_NOT_FOUND")


def get_training(workspace_id, training_id):
    return Training.get_in_workspace(workspace_id, training_id, not_found(training_id))


def get_agent_training(workspace_id, agent_id, training_id):
    """The training of this agent (another agent's, or workspace's: not found)."""
    training = get_training(workspace_id, training_id)
    if training.agent_id != agent_id:
        raise not_found(training_id)
    return training


def list_trainings(workspace_id, agent_id, paging, type=None, status=None):
    """A page of the agent's trainings, whose contents (up to millions of
    characters each) are read one at a time as the page is written."""
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    listed = Training.listed(workspace_id, agent_id, type, status)
    page = paginate(listed, Training, paging, columns=Training.leading_columns())
    page.items = Training.with_the_rest(page.items)
    return page


def create_training(workspace_id, agent_id, values, upload=None):
    """Create a training of values["type"]; `upload` is the file of a document.

    A page is fetched before the write transaction (never hold the write
    lock over the network); a failed fetch is stored as status failed.
    """
    return create_training_once(workspace_id, agent_id, values, upload)[0]


def create_training_once(workspace_id, agent_id, values, upload=None, key=None, ttl_hours=24):
    """create_training, with an Idempotency-Key: (training, replayed); a
    repeat of the same request returns the first one's training."""
    kind = values["type"]
    _check_fields(kind, values, creating=True)
    if (upload is not None) != (kind == "document"):
        raise ValidationError("file", "required for document trainings, refused otherwise")
    agents.get_agent(workspace_id, agent_id)
    asked = idempotency.fingerprint("create_training", agent_id, _asked(values, upload))
    if key and (first := _replayed(workspace_id, key, asked)):
        return first, True  # before fetching: a retry costs no second download
    fields = _fields(kind, values, upload)
    with transaction():
        if key and (first := _replayed(workspace_id, key, asked)):
            return first, True
        agent = agents.get_agent(workspace_id, agent_id)
        training = Training.create(workspace=workspace_id, agent=agent.id, type=kind, **fields)
        if key:
            idempotency.remember(workspace_id, key, asked, training.id, utcnow(), ttl_hours)
        return training, False


def _fields(kind, values, upload):
    fields = {name: values[name] for name in FIELDS[kind] if name in values}
    if kind == "url":
        fields.update(fetch_page(values["url"], values.get("title")))
    elif kind == "document":
        fields.update(read_document(upload, values.get("title")))
    return fields


def _asked(values, upload):
    """The request as asked: its fields, and a document's name and bytes."""
    if upload is None:
        return values
    content = upload.stream.read()
    upload.stream.seek(0)
    return {**values, "file": [upload.filename, hashlib.sha256(content).hexdigest()]}


def _replayed(workspace_id, key, asked):
    find = lambda training_id: Training.get_or_none(Training.id == training_id)  # noqa: E731
    return idempotency.replay(workspace_id, key, asked, utcnow(), find)


def update_training(workspace_id, training_id, changes):
    """Change the fields of the training's type; a url change (or the same url
    again) fetches the page anew."""
    current = get_training(workspace_id, training_id)
    kind = current.type
    _check_fields(kind, changes, creating=False)
    fields = dict(changes)
    if kind == "url" and "url" in changes:
        fields.update(fetch_page(changes["url"], changes.get("title")))
        if "title" not in changes and current.title:
            fields.pop("title")  # keep the title it has
    with transaction():
        training = get_training(workspace_id, training_id)
        for name, value in fields.items():
            setattr(training, name, value)
        training.save()
        return training


def delete_training(workspace_id, training_id):
    with transaction():
        get_training(workspace_id, training_id).delete_instance()


def previews(workspace_id, agent_id, limit, content_chars):
    """The agent's newest trainings, each with its content's first
    `content_chars` characters only (a list to look through)."""
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    return Training.previews(workspace_id, agent_id, limit, content_chars)


def search(workspace_id, agent_id, q, limit=SEARCH_DEFAULT_LIMIT, match="all", content_chars=None):
    """The agent's ready trainings best matching `q`, best first, each with
    `.score` (relevance: BM25 on SQLite, ts_rank on PostgreSQL; higher is
    better). match: "all" terms or "any" term. `content_chars`: read only
    the content's first characters (None: all of it; 0: nothing stored
    after the title, which Training.with_the_rest reads later)."""
    agent_id = agents.live_agent_id(workspace_id, agent_id)
    hits = Training.search(agent_id, q, limit, match == "all", content_chars)
    for hit in hits:
        hit.score = round(-hit.rank, 6)
    return hits


def search_streamed(workspace_id, agent_id, q, limit=SEARCH_DEFAULT_LIMIT, match="all"):
    """search's hits, each one's whole content read when the answer reaches it."""
    return Training.with_the_rest(search(workspace_id, agent_id, q, limit, match, 0))


def _check_fields(kind, values, creating):
    for name in ("title", "content", "question", "answer", "url"):
        if name in values and name not in FIELDS[kind]:
            raise ValidationError(name, f"does not apply to {kind} trainings")
    for name in REQUIRED[kind]:
        if creating and not values.get(name):
            raise ValidationError(
                name, f"required for {kind} trainings", code="MISSING_REQUIRED_FIELD"
            )
        if not creating and name in values and not values[name]:
            raise ValidationError(name, "must not be empty")


def fetch_page(url, title=None):
    """Fetch `url` (SSRF-guarded, time and size bounded) into training fields:
    its text with status ready, or status failed and the reason."""
    config = current_app.config
    allow_private = config["TRAININGS_ALLOW_PRIVATE_URLS"]
    limit = config["TRAININGS_URL_MAX_BYTES"]
    timeout = config["TRAININGS_URL_TIMEOUT_SECONDS"]
    try:
        response = netguard.safe_request(
            "GET",
            url,
            allow_private=allow_private,
            allowed_ports=() if allow_private else None,
            timeout=timeout,
            max_bytes=limit,
            headers={"Accept": "text/html, text/plain;q=0.9, */*;q=0.1"},
        )
    except netguard.UnsafeURL as error:
        reason = netguard.refusal(error, PRIVATE_URLS_SETTING, PRIVATE_URLS_SETTING)
        raise ValidationError("url", f"refused: {reason}") from None
    except requests.Timeout:
        return _failed(f"the page did not answer within {timeout} seconds", title)
    except requests.RequestException as error:
        return _failed(f"the page could not be fetched ({type(error).__name__})", title)
    problem = _response_problem(response, limit)
    if problem:
        return _failed(problem, title)
    return _page_fields(response, title)


def _response_problem(response, limit):
    if 300 <= response.status_code < 400:
        location = response.headers.get("Location", "elsewhere")
        return f"the page redirects (HTTP {response.status_code}) to {location}; add that URL"
    if not 200 <= response.status_code < 300:
        return f"the page answered HTTP {response.status_code}"
    if response.truncated:
        return f"the page is larger than {limit} bytes"
    media_type = _media_type(response)
    if media_type not in HTML_TYPES + TEXT_TYPES:
        return f"unsupported content type {media_type or '(none)'}"
    return None


def _page_fields(response, title):
    charset = response.encoding if "charset" in response.headers.get("Content-Type", "") else None
    text = decode_text(response.content, charset)
    page_title = ""
    if _media_type(response) in HTML_TYPES:
        page_title, text = html_to_text(text)
    if not text.strip():
        return _failed("the page has no text", title)
    return {
        "status": "ready",
        "failure_reason": None,
        "title": title or _derived_title(page_title),
        "content": text.strip(),
    }


def _derived_title(text):
    """A title made from a page's title or a file's name. Nobody typed it,
    so where a typed title would be refused it is made to fit instead: its
    control characters (a tab in a file's name) become spaces and it is cut
    to MAX_TITLE characters (code points, as the limit counts them; a str
    is never cut inside one)."""
    return formats.one_line(text)[:MAX_TITLE]


def _media_type(response):
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower()


def _failed(reason, title):
    return {"status": "failed", "failure_reason": reason, "title": title or "", "content": ""}


def read_document(upload, title=None):
    """Training fields of an uploaded .txt/.md/.html/.csv file (400 naming `file`)."""
    filename = PurePosixPath((upload.filename or "").replace("\\", "/")).name
    kind = DOCUMENT_SUFFIXES.get(PurePosixPath(filename).suffix.lower())
    if kind is None:
        raise ValidationError("file", "must be a .txt, .md, .html or .csv file")
    limit = current_app.config["TRAININGS_DOCUMENT_MAX_BYTES"]
    raw = upload.read(limit + 1)
    if len(raw) > limit:
        raise ValidationError("file", f"larger than {limit} bytes")
    if looks_binary(raw):
        raise ValidationError("file", "is not a text file")
    text = decode_text(raw)
    page_title = ""
    if kind == "html":
        page_title, text = html_to_text(text)
    if not text.strip():
        raise ValidationError("file", "has no text")
    return {
        "title": title or _derived_title(page_title or filename),
        "content": text.strip(),
        "filename": filename[:255],
    }
