"""What fails is logged with its ids and reason; job names are readable; the
JSON format writes one object per line."""

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from agent_platform import logs
from agent_platform.channels import SendError
from agent_platform.events import delivery
from agent_platform.services import sending
from conversations_helpers import data, send, setup_chat
from replies_helpers import fake  # noqa: F401  (fixture)
from test_cli import free_port, serving
from test_widget_push import Visitor, website
from webhooks_helpers import Receiver, Reply, raise_event, register

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def settings(tmp_path):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


def test_a_failed_message_is_logged_with_its_ids_and_reason(caller, fake, caplog):  # noqa: F811
    chat = setup_chat(caller)
    message = data(send(caller, chat["conversation"]["id"]), 201)
    fake.fail_next(SendError("131026", "Receiver is incapable"))
    with caplog.at_level(logging.WARNING, logger="agent_platform.sending"):
        sending.send_queued()
    line = caplog.records[-1].getMessage()
    assert message["id"] in line and chat["conversation"]["id"] in line
    assert chat["channel"]["id"] in line
    assert "failed: 131026 Receiver is incapable" in line


def test_a_failed_webhook_attempt_is_logged_with_its_ids(caller, caplog):
    receiver = Receiver(default=Reply(status=503))
    try:
        hook = register(caller, receiver.url)
        event = raise_event(caller.workspace_id)
        with caplog.at_level(logging.WARNING, logger="agent_platform.webhooks"):
            delivery.deliver_due()
    finally:
        receiver.close()
    [line] = [r.getMessage() for r in caplog.records if "attempt 1 failed" in r.getMessage()]
    assert hook["id"] in line and event.id in line and "HTTP 503" in line


def test_the_json_format_writes_one_object_per_line(tmp_path):
    code = (
        "import logging; from agent_platform import create_app;"
        f"create_app({{'DATABASE_PATH': {str(tmp_path / 'j.db')!r}, 'LOG_FORMAT': 'json'}});"
        "logging.getLogger('agent_platform.test').warning('message %s failed', 'm-1');"
        "\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n"
        "    logging.getLogger('agent_platform.test').exception('boom')"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT / "platform"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [(line["level"], line["logger"], line["message"]) for line in lines] == [
        ("WARNING", "agent_platform.test", "message m-1 failed"),
        ("ERROR", "agent_platform.test", "boom"),
    ]
    assert lines[0]["time"].endswith("Z") and "ZeroDivisionError" in lines[1]["exception"]


def test_a_json_line_carries_the_ids_of_the_record_as_fields():
    record = logging.LogRecord(
        "agent_platform.sending", logging.ERROR, __file__, 1, "m1 failed", (), None
    )
    record.__dict__.update(workspace_id="ws1", message_id="m1", attempt=2, details=None)
    line = json.loads(logs.JsonFormatter().format(record))
    assert (line["workspace_id"], line["message_id"], line["attempt"]) == ("ws1", "m1", 2)
    assert line["details"] is None and line["message"] == "m1 failed"
    assert (
        "args" not in line and "levelno" not in line
    )  # the record's own attributes are not fields


def test_a_failed_attempt_puts_its_ids_in_fields(caller, caplog):
    receiver = Receiver(default=Reply(status=503))
    try:
        hook = register(caller, receiver.url)
        event = raise_event(caller.workspace_id)
        with caplog.at_level(logging.WARNING, logger="agent_platform.webhooks"):
            delivery.deliver_due()
    finally:
        receiver.close()
    (record,) = [r for r in caplog.records if r.name == "agent_platform.webhooks"]
    fields = logs.fields_of(record)
    assert fields["workspace_id"] == caller.workspace_id
    assert (fields["webhook_id"], fields["event_id"]) == (hook["id"], event.id)
    assert (fields["attempt"], fields["http_status"]) == (1, 503)


def dev_server_errors(tmp_path, access_log):
    """`serve --dev` for real: one request, then stopped; what it logged."""
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "dev.db"),
        "AGENT_PLATFORM_SERVER_ACCESS_LOG": json.dumps(access_log),
    }
    process = subprocess.Popen(
        [sys.executable, "app.py", "--dev", "--port", str(port)],
        cwd=ROOT, env=environ, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                requests.get(f"http://127.0.0.1:{port}/v1/health?from=test", timeout=1)
                break
            except requests.ConnectionError:
                time.sleep(0.1)
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=20)
    return errors


@pytest.mark.parametrize("access_log", [True, False])
def test_the_dev_server_logs_requests_only_with_the_access_log_on(tmp_path, access_log):
    errors = dev_server_errors(tmp_path, access_log)
    assert "Running on http://127.0.0.1" in errors  # it served, and logged that
    assert ('"GET /v1/health?from=test HTTP/1.1" 200' in errors) is access_log


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_no_log_line_holds_a_visitor_token(tmp_path, log_format):
    """The push stream's URL carries the visitor token (an EventSource sends
    no headers): gunicorn's access log, on here, says `token=[redacted]`."""
    port, started = free_port(), []
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "tokens.db"),
        "AGENT_PLATFORM_SERVER_ACCESS_LOG": "true",
        "AGENT_PLATFORM_LOG_FORMAT": log_format,
    }
    with (tmp_path / "errors.log").open("w") as stderr:
        with serving(["--port", str(port)], environ, port, started, stderr) as (base, lines):
            api = requests.Session()
            api.headers["x-api-key"] = lines[1].strip()
            visitor = Visitor((base,), website((base, api)))
            with visitor.stream(query="&since=") as stream:
                assert stream.changes()["messages"] == []
            started[0].terminate()
            access = started[0].communicate(timeout=30)[0]
    logged = access + (tmp_path / "errors.log").read_text()
    assert visitor.token not in logged
    [line] = [line for line in access.splitlines() if "/api/events" in line]
    if log_format == "json":
        assert json.loads(line)["query"] == "token=[redacted]&since="
    else:
        assert "/api/events?token=[redacted]&since= HTTP/1.1" in line


def test_a_token_in_any_record_is_redacted():
    """gunicorn's error line for a request that failed mid-stream, say."""
    record = logging.LogRecord(
        "gunicorn.error", logging.ERROR, __file__, 1, "Error handling request %s %s",
        ("GET", "/widget/c/api/events?since=&token=s3cret;access_token=other"), None,
    )  # fmt: skip
    record.query = "token=s3cret&since="
    assert logs.RedactTokens().filter(record)
    assert record.getMessage() == (
        "Error handling request GET /widget/c/api/events?since=&token=[redacted];access_token=other"
    )
    assert record.query == "token=[redacted]&since="
