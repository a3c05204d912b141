"""The baseline: a bare Flask endpoint with nothing behind it."""

from flask import Flask, jsonify

app = Flask(__name__)


@app.get("/")
def bare():
    return jsonify({"ok": True})
