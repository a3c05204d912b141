"""The WhatsApp channel's background work: downloading inbound media and
marking inbound messages read (when the channel's `mark_read` is on).

Both are channel tasks (models.channel_tasks) created in the transaction that
stored the message, and run by one job every MEDIA_POLL_SECONDS: claimed with
a lease, done outside any transaction, the outcome stored. A failure waits
10 s, 1 min, 5 min, 30 min; after MAX_ATTEMPTS (or at once for a file over
MEDIA_MAX_BYTES, or a media URL on a host that is not Meta's) the task is
given up: a media message keeps its place in the conversation with
`error` = MEDIA_DOWNLOAD_FAILED, and the channel's event log says why.

Media URLs: the Graph API answers a media id with a short-lived URL that
needs the access token too. The token is only ever sent to the Graph API's
own host or to a host under WHATSAPP_MEDIA_HOSTS (Meta's CDN domains); a URL
elsewhere is not fetched at all (MEDIA_HOST_NOT_ALLOWED), since the token is
the channel's whole identity.
"""

import base64
import binascii
import contextlib
import logging
import os
import re
from datetime import timedelta
from urllib.parse import urlsplit

from flask import current_app

from ... import media_files as media
from ... import scheduler
from ...db import transaction
from ...models import ChannelEvent, Message
from ...models.base import utcnow
from ...private import open_new
from .. import task_runner
from ..task_runner import live_message
from .graph import GraphError, TooLarge, client, declared_size

log = logging.getLogger("agent_platform.whatsapp")

MAX_ATTEMPTS = 5
RETRY_DELAYS = (10, 60, 300, 1800)  # seconds after the 1st, 2nd, 3rd, 4th failure
BATCH = 10
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


@scheduler.job("MEDIA_POLL_SECONDS", in_every_process=True)
def run_tasks_job(now=None):
    """The scheduled run: media downloads and read receipts that are due."""
    return run_tasks(now)


def run_tasks(now=None, batch=BATCH):
    """Run up to `batch` due tasks; returns how many were attempted."""
    return task_runner.run_due(HANDLERS, _failed, now or utcnow(), batch)


def _token(channel):
    token = channel.settings.get("access_token")
    if not token:  # retried: the owner may still add it
        raise GraphError("CHANNEL_NOT_CONFIGURED", "The channel has no access_token", None, True)
    return token


# -- Media --------------------------------------------------------------------


def download_media(task, now):
    message = live_message(task)
    if message is None or not task.channel.is_active:
        task.finish()
        return
    token, api = _token(task.channel), client()
    info = api.get(task.payload["media_id"], token)
    url, limit = info.get("url"), current_app.config["MEDIA_MAX_BYTES"]
    if not url:
        raise GraphError("INVALID_RESPONSE", "The Graph API gave no media URL", info, True)
    _check_host(url, api.base)
    if (declared := declared_size(info.get("file_size"))) > limit:
        raise TooLarge(declared, limit)
    mime_type = info.get("mime_type") or task.payload.get("mime_type")
    name = media.new_name(mime_type)
    final = media.media_dir() / name
    partial = final.with_name(".part-" + name)
    try:
        with open_new(partial) as sink:
            size, digest, _ = api.download(url, token, sink, limit)
        _check_digest(info.get("sha256") or task.payload.get("sha256"), digest)
        os.replace(partial, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)
    if not _stored(task, name, mime_type, size, now):
        final.unlink(missing_ok=True)


def _check_host(url, graph_base):
    parts, graph = urlsplit(url), urlsplit(graph_base)
    host = (parts.hostname or "").lower()
    if (parts.scheme, host, parts.port) == (graph.scheme, graph.hostname, graph.port):
        return
    allowed = current_app.config["WHATSAPP_MEDIA_HOSTS"]
    if parts.scheme == "https" and any(host == d or host.endswith("." + d) for d in allowed):
        return
    raise GraphError(
        "MEDIA_HOST_NOT_ALLOWED",
        f"The media URL's host {host or '(none)'} is not the Graph API's nor under "
        "WHATSAPP_MEDIA_HOSTS; it was not fetched",
        {"url": url},
    )


def _check_digest(expected, digest):
    """Compare with the network's sha256, given as hex or as base64; a value
    in neither form cannot be checked and is ignored."""
    if not expected:
        return
    if _HEX.match(expected):
        matches = digest.hex() == expected.lower()
    else:
        try:
            matches = base64.b64decode(expected, validate=True) == digest
        except (binascii.Error, ValueError):
            return
    if not matches:
        raise GraphError(
            "MEDIA_CHECKSUM_MISMATCH",
            "The downloaded file does not match the sha256 the network gave",
            {"expected": expected, "got": digest.hex()},
            True,
        )


def _stored(task, name, mime_type, size, now):
    """Point the message at its stored file; False when it is gone meanwhile."""
    with transaction():
        message = live_message(task)
        task.finish()
        if message is None:
            return False
        message.media_url = media.public_url(name)
        message.media_mime_type = message.media_mime_type or mime_type
        kept = message.metadata.get("media") or {}
        message.metadata = {**message.metadata, "media": {**kept, "size": size}}
        message.updated_at = now
        message.save(
            only=[Message.media_url, Message.media_mime_type, Message.metadata, Message.updated_at],
            keep_updated_at=True,
        )
        return True


# -- Read receipts --------------------------------------------------------------


def mark_read(task, now):
    channel = task.channel
    number_id = channel.settings.get("phone_number_id")
    if not channel.is_active or not number_id or channel.settings.get("sandbox"):
        task.finish()
        return
    body = {
        "messaging_product": "whatsapp",
        "status": "read",
        "message_id": task.payload["external_id"],
    }
    client().post(f"{number_id}/messages", _token(channel), body)
    task.finish()


HANDLERS = {"media_download": download_media, "mark_read": mark_read}


# -- Outcomes -------------------------------------------------------------------


def _failed(task, error, now):
    if not isinstance(error, GraphError):  # a bug must not stop the other tasks
        log.error("whatsapp task %s (%s) failed", task.id, task.kind, exc_info=error)
        error = GraphError("INTERNAL_ERROR", str(error), None, True)
    final = isinstance(error, TooLarge) or error.code == "MEDIA_HOST_NOT_ALLOWED"
    final = final or task.attempts >= MAX_ATTEMPTS
    log.log(
        logging.ERROR if final else logging.WARNING,
        "whatsapp %s of message %s (channel %s) attempt %s failed: %s %s",
        task.kind, task.message_id, task.channel_id, task.attempts, error.code, error.title,
        extra={
            "workspace_id": task.channel.workspace_id, "channel_id": task.channel_id,
            "message_id": task.message_id, "task_id": task.id, "task": task.kind,
            "attempt": task.attempts, "code": error.code, "reason": error.title,
        },
    )  # fmt: skip
    with transaction():
        if not final:
            delay = task_runner.retry_delay(task, RETRY_DELAYS)
            task.retry_at(now + timedelta(seconds=delay), error.as_dict())
            return
        task.finish()
        payload = {
            "message_id": task.message_id,
            **task.payload,
            "attempts": task.attempts,
            "error": error.as_dict(),
        }
        ChannelEvent.record(task.channel_id, f"{task.kind}_failed", payload, True, now)
        if task.kind == "media_download":
            _media_failed(task, error, now)


def _media_failed(task, error, now):
    message = live_message(task)
    if message is None:
        return
    message.error = {
        "code": "MEDIA_DOWNLOAD_FAILED",
        "title": error.title,
        "details": {"code": error.code, "details": error.details, "attempts": task.attempts},
    }
    message.updated_at = now
    message.save(only=[Message.error, Message.updated_at], keep_updated_at=True)
