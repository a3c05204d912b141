"""Media files the platform downloaded from a network, stored under MEDIA_DIR
and served at {SERVER_PUBLIC_URL}/media/<name>.

Names are 32 random URL-safe characters plus an extension that follows the
MIME type: unguessable (the URL is the only key, as the networks' own media
URLs are), and the only names the media route serves, so no path a client
sends can leave the directory.
"""

import re
import secrets

from flask import current_app

from .config import resolve_path
from .errors import NotFound
from .private import make_dirs

# The types WhatsApp carries (and a few more), and the extension each is stored with.
EXTENSIONS = {
    "image/jpeg": "jpg",
    "image/png": "png",
    "image/webp": "webp",
    "image/gif": "gif",
    "audio/ogg": "ogg",
    "audio/mpeg": "mp3",
    "audio/aac": "aac",
    "audio/amr": "amr",
    "audio/mp4": "m4a",
    "video/mp4": "mp4",
    "video/3gpp": "3gp",
    "application/pdf": "pdf",
    "text/plain": "txt",
    "message/rfc822": "eml",
    "application/msword": "doc",
    "application/vnd.ms-excel": "xls",
    "application/vnd.ms-powerpoint": "ppt",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
}
CONTENT_TYPES = {extension: mime for mime, extension in EXTENSIONS.items()}
UNKNOWN_EXTENSION = "bin"
NAME = re.compile(r"^[A-Za-z0-9_-]{32}\.[a-z0-9]{1,5}$")
# Shown in the browser; anything else is a download (an HTML or SVG file
# served from the platform's own origin could run scripts there).
INLINE_PREFIXES = ("image/", "audio/", "video/")


def media_dir():
    return make_dirs(resolve_path(current_app.config["MEDIA_DIR"]))


def new_name(mime_type):
    """A fresh unguessable file name with the extension of `mime_type`."""
    base = (mime_type or "").split(";")[0].strip().lower()
    return f"{secrets.token_urlsafe(24)}.{EXTENSIONS.get(base, UNKNOWN_EXTENSION)}"


def public_url(name):
    return f"{current_app.config['SERVER_PUBLIC_URL'].rstrip('/')}/media/{name}"


def stored_file(name):
    """(path, content type, inline) of a stored file, else 404 MEDIA_NOT_FOUND.
    A name that is not one the platform makes is never looked up on disk."""
    path = media_dir() / name if NAME.match(name or "") else None
    if path is None or not path.is_file():
        raise NotFound("No such media file.", code="MEDIA_NOT_FOUND")
    content_type = CONTENT_TYPES.get(name.rsplit(".", 1)[1], "application/octet-stream")
    return path, content_type, content_type.startswith(INLINE_PREFIXES)
