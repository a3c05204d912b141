"""The Telegram channel's background work, as channel tasks made in the
transaction that stored a message: fetching the files customers send, and
answering button presses (answerCallbackQuery, which stops the spinner
Telegram shows on the pressed button).

Files: the message is stored at once with the file's `file_id` (metadata.media); a
channel task (kind telegram_media) made in the same transaction is run by a
job every MEDIA_POLL_SECONDS: getFile gives the file's path, the file is
streamed from <api_base>/file/bot<token>/<path> into MEDIA_DIR, and the
message's media_url becomes the platform's own /media/<name> URL — the bot
token is in the download URL, so that URL is never stored or shown. A failure
waits 10 s, 1 min, 5 min, 30 min (or the retry_after of a 429); after
MAX_ATTEMPTS, or at once for a file over MEDIA_MAX_BYTES, the message keeps
its place with error MEDIA_DOWNLOAD_FAILED and the channel's event log says why.
"""

import contextlib
import logging
import os
from datetime import timedelta

import requests
from flask import current_app

from ... import media_files as media
from ... import scheduler
from ...db import transaction
from ...models import ChannelEvent, ChannelTask, Message
from ...models.base import utcnow
from ...private import open_new
from .. import task_runner
from ..task_runner import live_message
from .botapi import BotApiError, client

log = logging.getLogger("agent_platform.telegram")

KIND = "telegram_media"
ANSWER = "telegram_answer"
MAX_ATTEMPTS = 5
RETRY_DELAYS = (10, 60, 300, 1800)
BATCH = 10
CHUNK = 64 * 1024


def queue_tasks(channel, message, now):
    """In the transaction that stored `message`: fetch its file, answer its
    button press, later."""
    file_id = (message.metadata.get("media") or {}).get("file_id")
    if file_id:
        ChannelTask.add(channel.id, message.id, KIND, {"file_id": file_id}, now)
    query_id = (message.metadata.get("button") or {}).get("callback_query_id")
    if query_id:
        ChannelTask.add(channel.id, message.id, ANSWER, {"callback_query_id": query_id}, now)


@scheduler.job("MEDIA_POLL_SECONDS", in_every_process=True)
def run_tasks(now=None, batch=BATCH):
    """Run up to `batch` due tasks; returns how many were attempted."""
    return task_runner.run_due(HANDLERS, _failed, now or utcnow(), batch)


def _download(task, now):
    message, channel = live_message(task), task.channel
    token = channel.settings.get("bot_token")
    if message is None or not channel.is_active or not token:
        return task.finish()
    api, limit = client(token), current_app.config["MEDIA_MAX_BYTES"]
    info = api.call("getFile", {"file_id": task.payload["file_id"]})
    if not isinstance(info, dict) or not info.get("file_path"):
        raise BotApiError("INVALID_RESPONSE", "getFile gave no file_path", True)
    if int(info.get("file_size") or 0) > limit:
        raise _too_large(int(info["file_size"]), limit)
    name = media.new_name(message.media_mime_type)
    size = _fetch(api, info["file_path"], media.media_dir() / name, limit)
    if not _stored(task, name, size, now):
        (media.media_dir() / name).unlink(missing_ok=True)


def _answer(task, now):
    """answerCallbackQuery: Telegram keeps a spinner on the button until then."""
    token = task.channel.settings.get("bot_token")
    if task.channel.is_active and token:
        client(token).call("answerCallbackQuery", task.payload)
    task.finish()


def _fetch(api, file_path, final, limit):
    """Stream the file into `final` (through a partial file); its size.
    A requests error's text would quote the URL, token and all: only its
    type is kept."""
    partial = final.with_name(".part-" + final.name)
    try:
        with _get(api, file_path) as response, open_new(partial) as sink:
            size = _copied(response, sink, limit)
        os.replace(partial, final)
        return size
    except requests.RequestException as error:
        title = f"The file download failed ({type(error).__name__})"
        raise BotApiError("UNREACHABLE", title, True) from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(partial)


def _get(api, file_path):
    url = api.file_url(file_path)
    return api.session.get(url, stream=True, timeout=api.timeout, allow_redirects=False)


def _copied(response, sink, limit):
    if response.status_code != 200:
        title = f"The file download answered HTTP {response.status_code}"
        raise BotApiError(response.status_code, title, True)
    size = 0
    for chunk in response.iter_content(CHUNK):
        size += len(chunk)
        if size > limit:
            raise _too_large(size, limit)
        sink.write(chunk)
    return size


def _too_large(size, limit):
    return BotApiError("MEDIA_TOO_LARGE", f"The file of {size} bytes is over the limit of {limit}")


def _stored(task, name, size, now):
    with transaction():
        message = live_message(task)
        task.finish()
        if message is None:
            return False
        message.media_url = media.public_url(name)
        kept = message.metadata.get("media") or {}
        message.metadata = {**message.metadata, "media": {**kept, "size": size}}
        message.updated_at = now
        message.save(
            only=[Message.media_url, Message.metadata, Message.updated_at], keep_updated_at=True
        )
        return True


HANDLERS = {KIND: _download, ANSWER: _answer}


def _failed(task, error, now):
    if not isinstance(error, BotApiError):  # a bug must not stop the other downloads
        log.error("Telegram task %s (%s) failed", task.id, task.kind, exc_info=error)
        error = BotApiError("INTERNAL_ERROR", f"The task failed ({type(error).__name__})", True)
    with transaction():
        if error.retryable and task.attempts < MAX_ATTEMPTS:
            # A 429 says how long to wait; trying sooner only earns another.
            delay = error.retry_after or task_runner.retry_delay(task, RETRY_DELAYS)
            task.retry_at(now + timedelta(seconds=delay), error.as_dict())
            return
        task.finish()
        payload = {**task.payload, "message_id": task.message_id, "error": error.as_dict()}
        ChannelEvent.record(task.channel_id, f"{task.kind}_failed", payload, True, now)
        message = live_message(task) if task.kind == KIND else None
        if message is not None:
            message.error = {"code": "MEDIA_DOWNLOAD_FAILED", "title": error.title, "details": None}
            message.save(only=[Message.error], keep_updated_at=True)
