"""The baseline of bench/whatsapp_inbound.py: a bare Flask endpoint that reads
the POSTed body and answers 200, nothing else."""

from flask import Flask, request

app = Flask(__name__)


@app.get("/")
def up():
    return "ok"


@app.post("/")
def bare():
    request.get_data()
    return {"ok": True}
