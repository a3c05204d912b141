"""Media files downloaded from the networks, served by name."""

from flask import send_file
from flask.views import MethodView

from .. import media_files as media
from .blueprint import ApiBlueprint

blp = ApiBlueprint(
    "media",
    __name__,
    url_prefix="/media",
    description="Media of inbound messages (public: the unguessable name is the key).",
)

FILE_RESPONSE = {
    "description": "The file, with its content type (images, audio and video inline, "
    "other files as attachments)",
    "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
}


@blp.route("/<name>")
class MediaFile(MethodView):
    @blp.public
    @blp.response(200)
    @blp.doc(responses={"200": FILE_RESPONSE})
    @blp.errors(404)
    def get(self, name):
        """A stored media file (the media_url of a message)"""
        path, content_type, inline = media.stored_file(name)
        response = send_file(
            path, mimetype=content_type, as_attachment=not inline, download_name=name, max_age=None
        )
        response.headers["Cache-Control"] = "private, max-age=86400"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = "default-src 'none'; sandbox"
        return response
