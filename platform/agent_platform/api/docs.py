"""Swagger UI's files, served from the installed package so /docs works offline."""

from flask import Blueprint, send_from_directory
from swagger_ui_bundle import swagger_ui_path

ASSETS_URL = "/docs/assets/"

blp = Blueprint("docs-assets", __name__)


@blp.route(ASSETS_URL + "<path:filename>")
def asset(filename):
    return send_from_directory(str(swagger_ui_path), filename)
