"""Secrets at rest: the database file holds none in plain text, the API and
signatures work as before, the key rotates safely, and a missing or wrong
key stops every command with the key file named."""

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import standardwebhooks
from click.testing import CliRunner
from cryptography.fernet import Fernet, InvalidToken

from agent_platform import secretbox
from agent_platform.cli import main
from agent_platform.db import database
from agent_platform.events import delivery
from agent_platform.migrate import apply_migrations
from agent_platform.services import secrets, sending
from conftest import database_environ
from conversations_helpers import WA_SETTINGS, data, make_channel, make_contact
from graph_stub import GraphStub
from webhooks_helpers import Receiver, raise_event, register

ROOT = Path(__file__).resolve().parents[1]
TELEGRAM = {"bot_token": "1234567:telegram-bot-token-value-xyz-0123", "secret_token": "tg-abc"}
EMAIL = {"smtp_password": "smtp-pass-value-1", "imap_password": "imap-pass-value-2"}
MODEL_KEY = "sk-model-api-key-value-0123456789"
MCP_TOKEN = "Bearer mcp-bearer-token-value"


@pytest.fixture
def graph():
    stub = GraphStub(token=WA_SETTINGS["access_token"], phone_number_id="106540352242922")
    yield stub
    stub.close()


@pytest.fixture
def receiver():
    server = Receiver()
    yield server
    server.close()


@pytest.fixture
def settings(tmp_path, graph):
    return {
        "DATABASE_PATH": str(tmp_path / "test.db"),
        "WHATSAPP_GRAPH_API_BASE": graph.base,
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
    }


@pytest.fixture
def stored(caller, receiver):
    """One of each kind of secret, created through the API; their plain values."""
    agent = data(caller.post("/v1/agents", json={"name": "Ana"}), 201)["id"]
    data(caller.put(f"/v1/agents/{agent}/settings", json={"api_key": MODEL_KEY}))
    channel = make_channel(caller, settings=dict(WA_SETTINGS), agent_id=agent)
    make_channel(caller, name="Bot", type="telegram", settings=dict(TELEGRAM))
    make_channel(caller, name="Mail", type="email", settings=dict(EMAIL))
    body = {"name": "Tools", "url": "https://1.1.1.1/mcp", "headers": {"X-Auth": MCP_TOKEN}}
    data(caller.post("/v1/mcp-servers", json=body), 201)
    hook = register(caller, receiver.url)
    rotated = data(caller.post(f"/v1/webhooks/{hook['id']}/rotate-secret"))
    plain = [MODEL_KEY, MCP_TOKEN, hook["secret"], rotated["secret"], *TELEGRAM.values()]
    plain += [*EMAIL.values(), *(WA_SETTINGS[k] for k in ("access_token", "app_secret"))]
    plain.append(WA_SETTINGS["verify_token"])
    return {"plain": plain, "channel": channel, "agent": agent, "hook": rotated}


def file_bytes(path):
    return b"".join(
        Path(f"{path}{tail}").read_bytes()
        for tail in ("", "-wal")
        if Path(f"{path}{tail}").exists()
    )


def raw_secrets():
    """Every stored secret value, as stored (read with SQL, past the models)."""
    rows = database.execute_sql(
        "SELECT secret FROM webhook UNION ALL SELECT previous_secret FROM webhook"
    ).fetchall()
    values = [row[0] for row in rows]
    for table, column, keys in (
        ("channel", "settings", {"access_token", "app_secret", "verify_token", "bot_token",
                                 "secret_token", "smtp_password", "imap_password"}),
        ("agent", "settings", {"api_key"}),
        ("mcp_server", "headers", None),
    ):  # fmt: skip
        for (text,) in database.execute_sql(f"SELECT {column} FROM {table}"):
            document = json.loads(text)
            values += [v for k, v in document.items() if keys is None or k in keys]
    return values


@pytest.mark.sqlite_only(reason="reads the database file's bytes and checkpoints its WAL")
def test_the_database_file_holds_no_secret_in_plain_text(app, stored):
    path = app.config["DATABASE_PATH"]
    before_checkpoint = file_bytes(path)
    database.execute_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    after_checkpoint = file_bytes(path)
    assert WA_SETTINGS["phone_number_id"].encode() in after_checkpoint  # the grep sees data
    for secret in stored["plain"]:
        assert secret.encode() not in before_checkpoint, secret
        assert secret.encode() not in after_checkpoint, secret
    found = raw_secrets()
    assert len(found) == len(stored["plain"])
    assert all(value.startswith("enc:v1:") for value in found)


def test_the_api_signatures_and_sends_work_as_before(app, caller, stored, receiver, graph):
    shown = data(caller.get(f"/v1/channels/{stored['channel']['id']}"))["settings"]
    assert shown["access_token_set"] is True and "access_token" not in shown
    agent_settings = data(caller.get(f"/v1/agents/{stored['agent']}/settings"))
    assert agent_settings["api_key_set"] is True and "api_key" not in agent_settings
    raise_event(caller.workspace_id, "message.sent", {"id": "m1"})
    delivery.deliver_due()
    (got,) = receiver.requests
    verified = standardwebhooks.Webhook(stored["hook"]["secret"]).verify(got.body, got.headers)
    assert verified["event"] == "message.sent"
    contact = make_contact(caller, name="Bia", phone="+5511911112222")
    body = {"contact_id": contact["id"], "channel_id": stored["channel"]["id"]}
    conversation = data(caller.post("/v1/conversations", json=body), 201)
    data(caller.post(f"/v1/conversations/{conversation['id']}/messages", json={"text": "Hi"}), 201)
    assert sending.send_queued_job() == 1
    [request] = graph.requests
    assert request.headers["authorization"] == f"Bearer {WA_SETTINGS['access_token']}"


def _make_plain():
    """Store the secrets in plain text, as the service did before encrypting."""
    settings = {**WA_SETTINGS, "mark_read": True}
    with database.atomic():
        database.execute_sql("UPDATE webhook SET secret = 'whsec_cGxhaW4tc2VjcmV0LWJlZm9yZQ=='")
        database.execute_sql(
            "UPDATE channel SET settings = ? WHERE type = 'whatsapp'", (json.dumps(settings),)
        )


def test_plain_rows_from_before_are_encrypted_by_the_migration_step(app, caller, stored, receiver):
    database.close_all()
    _make_plain()
    assert "whsec_cGxhaW4tc2VjcmV0LWJlZm9yZQ==" in raw_secrets()
    assert apply_migrations() == []
    assert all(value.startswith("enc:v1:") for value in raw_secrets())
    assert secrets.secure_stored_secrets() == 0  # idempotent
    raise_event(caller.workspace_id, "message.sent", {"id": "m1"})
    delivery.deliver_due()
    (got,) = receiver.requests
    secret = "whsec_cGxhaW4tc2VjcmV0LWJlZm9yZQ=="
    assert standardwebhooks.Webhook(secret).verify(got.body, got.headers)["event"] == "message.sent"
    shown = data(caller.get(f"/v1/channels/{stored['channel']['id']}"))["settings"]
    assert shown["mark_read"] is True and shown["app_secret_set"] is True


def key_file(app):
    return Path(app.config["DATABASE_PATH"]).parent / "secrets.key"


def test_the_key_file_is_made_beside_the_database_with_mode_0600(app, stored):
    path = key_file(app)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert secretbox.ring().source.path == path
    Fernet(path.read_text().strip())  # a valid key, alone in the file


def test_rotation_re_encrypts_everything_and_the_old_key_alone_reads_nothing(
    app, caller, stored, receiver
):
    path = key_file(app)
    old = Fernet(path.read_text().strip())
    result = CliRunner().invoke(main, ["secrets", "rotate-key"], env=_cli_env(app))
    assert result.exit_code == 0, result.output
    # The webhook (2 columns), 3 channels, the agent, the MCP server.
    assert "Re-encrypted 7 rows" in result.output
    assert not path.with_name("secrets.key.old").exists()
    new = Fernet(path.read_text().strip())
    for value in raw_secrets():
        token = value.removeprefix("enc:v1:").encode()
        with pytest.raises(InvalidToken):
            old.decrypt(token)
        assert new.decrypt(token).decode() in stored["plain"]
    raise_event(caller.workspace_id, "message.sent", {"id": "m1"})
    delivery.deliver_due()
    (got,) = receiver.requests
    assert standardwebhooks.Webhook(stored["hook"]["secret"]).verify(got.body, got.headers)


def _cli_env(app, **extra):
    return {**database_environ(app), **extra}


def test_a_rotation_that_crashes_half_way_loses_nothing(app, stored, monkeypatch):
    path = key_file(app)
    first = path.read_text().strip()

    def crash():
        raise RuntimeError("power cut")

    monkeypatch.setattr(secrets, "reencrypt", crash)
    with pytest.raises(RuntimeError):
        secrets.rotate_key()
    monkeypatch.undo()
    assert path.with_name("secrets.key.old").read_text().strip() == first
    assert path.read_text().strip() != first
    # A new start reads every secret (both keys are in use), then a second run finishes.
    result = CliRunner().invoke(main, ["secrets", "rotate-key"], env=_cli_env(app))
    assert result.exit_code == 0, result.output
    assert not path.with_name("secrets.key.old").exists()
    final = Fernet(path.read_text().strip())
    decrypted = [final.decrypt(v.removeprefix("enc:v1:").encode()).decode() for v in raw_secrets()]
    assert sorted(decrypted) == sorted(stored["plain"])


def run_cli(app, *args, **env):
    """The real console script in a child process: exit code and stderr."""
    environ = {**os.environ, **_cli_env(app, **env)}
    environ["PYTHONPATH"] = str(ROOT / "platform")
    code = "import sys; from agent_platform.cli import main; main(sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=environ, capture_output=True, text=True
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize("command", [["migrate"], ["keys", "list"]])
def test_a_missing_key_file_stops_every_command_clearly(app, stored, command):
    path = key_file(app)
    path.unlink()
    result = CliRunner().invoke(main, command, env=_cli_env(app))
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert str(path) in result.output and "does not exist" in result.output
    assert "Restore the key file" in result.output
    assert not path.exists()  # no new key made over encrypted secrets


def test_a_wrong_key_is_a_clear_error_without_a_traceback(app, stored):
    path = key_file(app)
    path.write_text(Fernet.generate_key().decode())
    code, stderr = run_cli(app, "keys", "list")
    assert code != 0 and "Traceback" not in stderr
    assert str(path) in stderr and "cannot decrypt" in stderr
    path.write_text("not a key")
    code, stderr = run_cli(app, "migrate")
    assert code != 0 and "Traceback" not in stderr
    assert "does not hold a valid key" in stderr and str(path) in stderr


def test_a_key_given_by_the_environment(app, stored, tmp_path):
    current = key_file(app).read_text().strip()
    new = secretbox.new_key()
    refused = CliRunner().invoke(
        main, ["secrets", "rotate-key"], env=_cli_env(app, AGENT_PLATFORM_SECRETS_KEY=current)
    )
    assert refused.exit_code != 0 and "secrets reencrypt" in refused.output
    both = _cli_env(app, AGENT_PLATFORM_SECRETS_KEY=f"{new},{current}")
    done = CliRunner().invoke(main, ["secrets", "reencrypt"], env=both)
    assert done.exit_code == 0, done.output
    key_file(app).unlink()  # the file is no longer needed, nor made again
    only_new = _cli_env(app, AGENT_PLATFORM_SECRETS_KEY=new)
    assert CliRunner().invoke(main, ["keys", "list"], env=only_new).exit_code == 0
    assert not key_file(app).exists()
    wrong = CliRunner().invoke(
        main, ["keys", "list"], env=_cli_env(app, AGENT_PLATFORM_SECRETS_KEY=current)
    )
    assert wrong.exit_code != 0 and "AGENT_PLATFORM_SECRETS_KEY" in wrong.output


def test_the_key_file_sits_beside_the_configuration_file(tmp_path):
    config = tmp_path / "etc" / "agent-platform.toml"
    config.parent.mkdir()
    config.write_text(f'[database]\npath = "{tmp_path / "data" / "x.db"}"\n')
    result = CliRunner().invoke(main, ["migrate", "--config", str(config)], env={})
    assert result.exit_code == 0, result.output
    assert (tmp_path / "etc" / "secrets.key").exists()
    assert not (tmp_path / "data" / "secrets.key").exists()
    printed = CliRunner().invoke(main, ["secrets", "generate-key"])
    Fernet(printed.output.strip())


def test_a_running_service_reads_the_rotated_key_without_a_restart(app, caller, stored):
    # Another process's view of the same key file, made before the rotation.
    running = secretbox.KeyRing(secretbox.KeyFile(key_file(app)))
    before = running.seal("written before")
    secrets.rotate_key()
    [(settings,)] = database.execute_sql("SELECT settings FROM agent").fetchall()
    assert running.open(json.loads(settings)["api_key"]) == MODEL_KEY  # new key read again
    after = running.seal("written after")
    new = Fernet(key_file(app).read_text().strip())
    assert new.decrypt(after.removeprefix("enc:v1:").encode()) == b"written after"
    with pytest.raises(InvalidToken):
        new.decrypt(before.removeprefix("enc:v1:").encode())
