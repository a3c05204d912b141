"""The README is the front door: one screen of reading, and every page and
section it (or a docs page) links to exists."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from test_cli import free_port, serving

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\[[^\]]+\]\(([^)\s]+)\)")


def slugs(path):
    """GitHub's anchors of the page's headings."""
    found = set()
    for line in path.read_text().splitlines():
        heading = re.match(r"#{1,6} (.*)", line)
        if heading:
            text = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower())
            found.add(text.replace(" ", "-"))
    return found


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) < 300


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_every_relative_link_points_at_something_that_exists(page):
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("<"):
            continue  # http(s), mailto: checked by nobody here
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in slugs(linked):
            broken.append(target)
    assert broken == []


def readme_block(marker):
    """The README's fenced code block that contains `marker`."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    [block] = [block for block in blocks if marker in block]
    return block


def expected_output(block):
    """A block's `# ...` lines after its last command: the output it shows."""
    lines = block.rstrip("\n").splitlines()
    commands = [i for i, line in enumerate(lines) if not line.startswith("#")]
    return [line.removeprefix("# ") for line in lines[commands[-1] + 1 :]]


def test_the_first_conversation_runs_as_written(tmp_path):
    """The README's first conversation, pasted into a shell as it is against
    a running service with its default settings, gets the agent's answer; so
    does its `simulate --channel`, printing what the README shows."""
    conversation = readme_block("# 1. an agent")
    simulate = readme_block("simulate --channel")
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "readme.db"),
        "AGENT_PLATFORM_SERVER_PORT": str(port),
    }
    script = (conversation + simulate).replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    script = script.replace(".venv/bin/agent-platform", f"{sys.executable} -m agent_platform")
    with serving(["--port", str(port)], environ, port) as (base, lines):
        key = lines[1].strip()
        result = subprocess.run(
            ["bash", "-e", "-c", script], env={**environ, "KEY": key},
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        headers = {"x-api-key": key}
        [channel] = requests.get(base + "/v1/channels", headers=headers, timeout=5).json()["data"]
        path = f"/v1/conversations?channel_id={channel['id']}"
        [chat] = requests.get(base + path, headers=headers, timeout=5).json()["data"]
        path = f"/v1/conversations/{chat['id']}/messages?order=asc"
        messages = requests.get(base + path, headers=headers, timeout=5).json()["data"]
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == expected_output(simulate)
    assert channel["settings"]["sandbox"] is True and channel["status"] == "connected"
    question, answer = "What time do you open?", "Every day from 9 am to 6 pm."
    assert [(m["direction"], m["text"]) for m in messages] == [
        ("inbound", question), ("outbound", answer), ("inbound", question), ("outbound", answer),
    ]  # fmt: skip
    first_answer = messages[1]
    assert (first_answer["sender_type"], first_answer["status"]) == ("agent", "sent")
    assert first_answer["metadata"]["sandbox_request"]["json"]["text"]["body"] == answer
    assert f'"text":"{answer}"' in expected_output(conversation)[-1]


def run_block(block, environ, port, cwd):
    script = block.replace("127.0.0.1:8080", f"127.0.0.1:{port}")
    script = script.replace(".venv/bin/agent-platform", f"{sys.executable} -m agent_platform")
    result = subprocess.run(["bash", "-e", "-c", script], env=environ, cwd=cwd,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def shown_like(lines, block, port):
    """Each printed line as the block shows it; a word ending in `…` (an id,
    a token) stands for any."""
    expected = [
        line.replace("127.0.0.1:8080", f"127.0.0.1:{port}") for line in expected_output(block)
    ]
    patterns = [re.sub(r"[\w-]*…", ".+", re.escape(line)) for line in expected]
    return len(lines) == len(patterns) and all(map(re.fullmatch, patterns, lines))


def test_the_inbox_steps_run_as_written(tmp_path):
    """The README's inbox: its `users create` prints the link it shows, the
    link signs in, the customer it plays waits for a human; after take over,
    a reply and hand back, the agent answers the next message."""
    from inbox_served import signed_in

    create, ask = readme_block("users create"), readme_block("gift cards")
    port = free_port()
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "readme.db"),
        "AGENT_PLATFORM_SERVER_PORT": str(port),
    }
    with serving(["--port", str(port)], environ, port) as (base, lines):
        run_block(readme_block('simulate "Hello'), environ, port, tmp_path)  # the sandbox
        created = run_block(create, environ, port, tmp_path)
        assert shown_like(created, create, port), created
        assert shown_like(run_block(ask, environ, port, tmp_path)[-2:], ask, port)
        person = signed_in(created[-1])
        page = person.get(f"{base}/app", timeout=10).text
        assert "Needs a human 1" in " ".join(re.sub(r"<[^>]+>", " ", page).split())
        path = re.search(r'href="(/app/conversations/[^"?]+)"', page).group(1)
        token = re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)
        for action, form in (("take-over", {}), ("reply", {"text": "Yes, from 25 euros!"}),
                             ("hand-back", {})):  # fmt: skip
            done = person.post(f"{base}{path}/{action}", data={"csrf_token": token, **form})
            assert done.status_code == 200 and 'class="notice done"' in done.text, done.text
        again = run_block('.venv/bin/agent-platform simulate "Hello, what are your opening hours?"',
                          environ, port, tmp_path)  # fmt: skip
    assert again[-1].startswith("Agent (sent): We are open Monday to Friday")
