"""Media of inbound messages: downloaded by the job from the Graph API
stand-in (metadata, then the file, both with the token), checked (size,
sha256, host), stored under MEDIA_DIR and served at /media/<name>."""

import base64
import hashlib
import os
import stat
from datetime import timedelta
from pathlib import Path

import pytest

from agent_platform.channels import task_runner
from agent_platform.channels.whatsapp import tasks
from agent_platform.db import transaction
from agent_platform.models import ChannelEvent, ChannelTask, Message
from agent_platform.models.base import utcnow
from conftest import assert_error
from conversations_helpers import WA_SETTINGS, data
from graph_stub import Scripted
from whatsapp_helpers import *  # noqa: F403  (the fixtures)
from whatsapp_helpers import message, messages_payload, received

JPEG = b"\xff\xd8\xff\xe0" + bytes(range(256)) * 40
TOKEN = WA_SETTINGS["access_token"]


def deliver(client, channel, kind="image", media_id="1479537139650973", **media):
    content = {"mime_type": "image/jpeg", "sha256": _b64(JPEG), "id": media_id, **media}
    received(client, channel["id"], messages_payload(message(kind, content, wamid="wamid.M")))
    return Message.get(Message.external_id == "wamid.M")


def _b64(content):
    return base64.b64encode(hashlib.sha256(content).digest()).decode()


def shown(caller, stored):
    return data(caller.get(f"/v1/messages/{stored.id}"))


def fetch(client, path):
    """GET a file and close the response (it holds the file open until then)."""
    response = client.get(path)
    response.get_data()
    response.close()
    return response


def stored_files(app):
    directory = app.config["MEDIA_DIR"]
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def test_an_image_is_downloaded_stored_and_served(app, client, caller, channel, graph):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    stored = deliver(client, channel)
    assert shown(caller, stored)["media_url"] is None  # not while answering the POST
    assert tasks.run_tasks() == 1
    info, download = graph.requests
    assert (info.method, info.path) == ("GET", "/v21.0/1479537139650973")
    assert (download.method, download.path) == ("GET", "/files/1479537139650973")
    for request in (info, download):
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
    got = shown(caller, stored)
    [name] = stored_files(app)
    assert got["media_url"] == f"https://agents.example.com/media/{name}"
    assert len(name) == len("x" * 32 + ".jpg") and name.endswith(".jpg")
    assert got["media_mime_type"] == "image/jpeg"
    assert got["metadata"]["media"]["size"] == len(JPEG)
    assert got["error"] is None
    # The service's user's alone, whatever the umask (agent_platform.private).
    media_dir = Path(app.config["MEDIA_DIR"])
    assert stat.S_IMODE(media_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((media_dir / name).stat().st_mode) == 0o600
    assert ChannelTask.select().count() == 0
    served = fetch(client, f"/media/{name}")
    assert served.status_code == 200
    assert served.data == JPEG
    assert served.mimetype == "image/jpeg"
    assert "attachment" not in served.headers.get("Content-Disposition", "")
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    assert tasks.run_tasks() == 0


def test_voice_notes_and_documents_get_their_types(app, client, caller, channel, graph):
    graph.add_media("77", b"OggS-voice", "audio/ogg; codecs=opus")
    received(
        client,
        channel["id"],
        messages_payload(
            message("audio", {"mime_type": "audio/ogg; codecs=opus", "id": "77", "voice": True}),
        ),
    )
    graph.add_media("78", b"%PDF-1.7 invoice", "application/pdf")
    graph.add_media("79", b"\x00weird", "application/x-weird")
    document = {"mime_type": "application/pdf", "id": "78", "filename": "invoice.pdf"}
    received(
        client,
        channel["id"],
        messages_payload(
            message("document", document, wamid="wamid.D"),
            message("document", {"mime_type": "application/x-weird", "id": "79"}, wamid="wamid.W"),
        ),
    )
    assert tasks.run_tasks() == 3
    urls = {m.external_id: m.media_url.rsplit("/", 1)[1] for m in Message.select()}
    voice = fetch(client, f"/media/{urls['wamid.IN1']}")
    assert (voice.mimetype, voice.data) == ("audio/ogg", b"OggS-voice")
    pdf = fetch(client, f"/media/{urls['wamid.D']}")
    assert pdf.mimetype == "application/pdf"
    assert pdf.headers["Content-Disposition"].startswith("attachment")
    weird = fetch(client, f"/media/{urls['wamid.W']}")
    assert urls["wamid.W"].endswith(".bin")
    assert weird.mimetype == "application/octet-stream"
    assert weird.headers["Content-Disposition"].startswith("attachment")


def test_the_media_route_serves_only_stored_names(app, client, channel, graph):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    deliver(client, channel)
    tasks.run_tasks()
    [name] = stored_files(app)
    secret = os.path.join(os.path.dirname(app.config["MEDIA_DIR"]), "secret.txt")
    with open(secret, "w") as handle:
        handle.write("database next door")
    for path in (
        "/media/" + "A" * 32 + ".jpg",  # the right shape, not stored
        "/media/../secret.txt",
        "/media/..%2fsecret.txt",
        "/media/%2e%2e%2fsecret.txt",
        "/media/secret.txt",
        "/media/.part-" + name,
        "/media/" + name.upper(),
        "/media/" + name + "/",
    ):
        response = fetch(client, path)
        assert response.status_code == 404, path
        assert b"database next door" not in response.data
    assert_error(fetch(client, "/media/" + "A" * 32 + ".jpg"), 404, "MEDIA_NOT_FOUND")


def test_a_checksum_mismatch_is_retried_then_recorded_on_the_message(
    app, client, caller, channel, graph
):
    graph.add_media("1479537139650973", JPEG, "image/jpeg", sha256="0" * 64)
    stored = deliver(client, channel)
    now = utcnow()
    assert tasks.run_tasks(now=now) == 1
    task = ChannelTask.get()
    assert (task.attempts, task.last_error["code"]) == (1, "MEDIA_CHECKSUM_MISMATCH")
    assert tasks.run_tasks(now=now + timedelta(seconds=5)) == 0  # waits 10 s
    for _ in range(2, tasks.MAX_ATTEMPTS + 1):
        now += timedelta(hours=1)
        assert tasks.run_tasks(now=now) == 1
    assert ChannelTask.select().count() == 0
    got = shown(caller, stored)
    assert got["media_url"] is None
    assert got["error"]["code"] == "MEDIA_DOWNLOAD_FAILED"
    assert got["error"]["details"]["code"] == "MEDIA_CHECKSUM_MISMATCH"
    assert got["error"]["details"]["attempts"] == tasks.MAX_ATTEMPTS
    assert got["type"] == "image"  # the message itself is kept
    event = ChannelEvent.get()
    assert (event.kind, event.payload["message_id"]) == ("media_download_failed", stored.id)
    assert stored_files(app) == []


def test_the_webhooks_base64_sha256_is_checked_when_the_metadata_has_none(
    client, caller, channel, graph
):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    graph.media["1479537139650973"].sha256 = ""  # the metadata gives none
    stored = deliver(client, channel, sha256=_b64(b"something else"))
    tasks.run_tasks()
    assert ChannelTask.get().last_error["code"] == "MEDIA_CHECKSUM_MISMATCH"
    ChannelTask.delete().execute()
    deliver_again = message(
        "image", {"id": "1479537139650973", "sha256": _b64(JPEG)}, wamid="wamid.M2"
    )
    received(client, channel["id"], messages_payload(deliver_again))
    tasks.run_tasks()
    assert Message.get(Message.external_id == "wamid.M2").media_url is not None
    assert shown(caller, stored)["media_url"] is None


@pytest.mark.parametrize("declared", [None, 10])
def test_a_file_over_the_limit_fails_at_once(app, client, caller, channel, graph, declared):
    app.config["MEDIA_MAX_BYTES"] = 1000
    # declared None: the metadata tells the real size; 10: it lies, the stream is cut.
    graph.add_media("1479537139650973", JPEG, "image/jpeg", file_size=declared)
    stored = deliver(client, channel)
    assert tasks.run_tasks() == 1
    assert ChannelTask.select().count() == 0
    error = shown(caller, stored)["error"]
    assert error["code"] == "MEDIA_DOWNLOAD_FAILED"
    assert error["details"]["code"] == "MEDIA_TOO_LARGE"
    assert error["details"]["attempts"] == 1
    assert stored_files(app) == []
    downloads = [r for r in graph.requests if r.path.startswith("/files/")]
    assert len(downloads) == (0 if declared is None else 1)


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example.com/steal",
        "https://fbsbx.com.evil.example.com/x",
        "http://lookaside.fbsbx.com/whatsapp_business/attachments/?mid=1",  # not https
        "file:///etc/passwd",
    ],
)
def test_the_token_never_goes_to_another_host(client, caller, channel, graph, url):
    graph.add_media("1479537139650973", JPEG, "image/jpeg", url=url)
    stored = deliver(client, channel)
    tasks.run_tasks()
    assert [r.path for r in graph.requests] == ["/v21.0/1479537139650973"]
    error = shown(caller, stored)["error"]
    assert error["details"]["code"] == "MEDIA_HOST_NOT_ALLOWED"
    assert ChannelTask.select().count() == 0


def test_meta_hosts_are_fetched(app, client, channel, graph):
    app.config["WHATSAPP_MEDIA_HOSTS"] = ["127.0.0.1"]
    graph.add_media("1479537139650973", JPEG, "image/jpeg", url="https://127.0.0.1:9/media")
    deliver(client, channel)
    tasks.run_tasks()
    # Allowed, so it was tried (nothing listens there): retried later, not refused.
    assert ChannelTask.get().last_error["code"] == "UNREACHABLE"


@pytest.mark.parametrize("length", ["²", "12.5", "abc", "9" * 5000])
def test_a_length_that_is_no_number_is_measured(app, client, caller, channel, graph, length):
    """A Content-Length, or a file_size, that Python cannot read as a whole
    number: the file is downloaded and measured as it comes (or, thousands
    of digits long, over any limit), never a failed task."""
    app.config["MEDIA_MAX_BYTES"] = 10**6
    graph.add_media("1479537139650973", JPEG, "image/jpeg", file_size=length)
    answer = Scripted(200, JPEG, headers={"Content-Type": "image/jpeg", "Content-Length": length})
    graph.media["1479537139650973"].failures.append(answer)
    stored = deliver(client, channel)
    assert tasks.run_tasks() == 1
    assert ChannelTask.select().count() == 0
    if len(length) > 18:
        assert shown(caller, stored)["error"]["details"]["code"] == "MEDIA_TOO_LARGE"
        return
    assert shown(caller, stored)["media_url"] is not None
    (name,) = stored_files(app)
    with open(os.path.join(app.config["MEDIA_DIR"], name), "rb") as stored_file:
        assert stored_file.read() == JPEG


def test_a_server_error_on_the_file_is_retried(app, client, caller, channel, graph):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    graph.media["1479537139650973"].failures.append(Scripted(500, {"error": {"code": 2}}))
    graph.media["1479537139650973"].failures.append(Scripted(404, b"expired"))
    stored = deliver(client, channel)
    now = utcnow()
    tasks.run_tasks(now=now)
    tasks.run_tasks(now=now + timedelta(seconds=10))
    assert ChannelTask.get().attempts == 2
    assert shown(caller, stored)["media_url"] is None
    tasks.run_tasks(now=now + timedelta(seconds=70))
    assert shown(caller, stored)["media_url"] is not None
    assert len(stored_files(app)) == 1


def test_a_message_deleted_before_its_download_is_left_alone(app, client, caller, channel, graph):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    stored = deliver(client, channel)
    assert caller.delete(f"/v1/messages/{stored.id}").status_code == 200
    assert tasks.run_tasks() == 1
    assert graph.requests == []
    assert ChannelTask.select().count() == 0
    assert shown(caller, stored)["media_url"] is None
    assert stored_files(app) == []


def test_leases_keep_two_workers_from_downloading_one_file(client, channel, graph):
    graph.add_media("1479537139650973", JPEG, "image/jpeg")
    deliver(client, channel)
    now = utcnow()
    with transaction():
        claimed = ChannelTask.claim(now, tuple(tasks.HANDLERS), 10, task_runner.LEASE)
    assert len(claimed) == 1
    assert tasks.run_tasks(now=now) == 0  # leased by the first
    later = now + task_runner.LEASE + timedelta(seconds=1)
    assert tasks.run_tasks(now=later) == 1  # it crashed


def test_a_failed_download_is_logged_with_ids_and_reason(client, caller, channel, graph, caplog):
    graph.add_media("1479537139650973", JPEG, "image/jpeg", sha256="0" * 64)
    stored = deliver(client, channel)
    now = utcnow()
    for attempt in range(tasks.MAX_ATTEMPTS):
        tasks.run_tasks(now=now + timedelta(hours=attempt))
    logged = [r for r in caplog.records if r.name == "agent_platform.whatsapp"]
    assert [r.levelname for r in logged] == ["WARNING"] * (tasks.MAX_ATTEMPTS - 1) + ["ERROR"]
    last = logged[-1]
    assert (last.workspace_id, last.channel_id) == (caller.workspace_id, channel["id"])
    assert (last.message_id, last.task, last.attempt) == (
        stored.id,
        "media_download",
        tasks.MAX_ATTEMPTS,
    )
    assert last.code == "MEDIA_CHECKSUM_MISMATCH" and "sha256" in last.reason
    assert f"of message {stored.id}" in last.getMessage()
