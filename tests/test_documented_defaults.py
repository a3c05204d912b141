"""Every default the docs quote is the code's: the agent settings
(services/agents.py DEFAULT_SETTINGS) and the configuration (config.DEFAULTS,
by its file name `replies.debounce_seconds` or its variable name
`REPLIES_DEBOUNCE_SECONDS`), wherever a page quotes one:
- a table row under a "Default" column: `| `name` | default | ... |`, or
  `| `a`, `b` | 1, 2 | ... |` for several settings in one row;
- a line: "`name` (default 0.40)", "`name` (default: 5)", "`name` (30 s)".
A wrong number in any of them fails, naming the page, the setting and both
values."""

import json
import re
from pathlib import Path

import pytest

from agent_platform import config_rules
from agent_platform.config import DEFAULTS
from agent_platform.services.agents import DEFAULT_SETTINGS

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
CODE = {
    **DEFAULT_SETTINGS,
    **DEFAULTS,
    **{config_rules.toml_name(key): value for key, value in DEFAULTS.items()},
}
NAMES = re.compile(r"^(`[A-Za-z0-9_.]+`)(, `[A-Za-z0-9_.]+`)*$")
NUMBER = re.compile(r"^-?\d[\d,]*(?:\.\d+)?")
INLINE = re.compile(
    r"`([A-Za-z0-9_.]+)` \((?:default:? )?`?(-?\d[\d,]*(?:\.\d+)?|true|false|null)`?"
    r"(?: [A-Za-z]+)?[,;)]"
)
UNITS = {"KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


def cells(line):
    return [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def table_quotes(text):
    """(line number, names, the default cell) of each row of a table whose
    second column is "Default"; a header "Key (`[webhooks]` ...)" names the
    section of its rows' keys."""
    found, defaults, section = [], False, ""
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|"):
            defaults = False
            continue
        row = cells(line)
        if len(row) > 1 and row[1].lower() == "default":
            defaults = True
            named = re.search(r"`\[([a-z_]+)\]`", row[0])
            section = f"{named.group(1)}." if named else ""
        elif defaults and NAMES.match(row[0]) and not set(row[1]) <= {"-"}:
            names = [section + name for name in re.findall(r"`([^`]+)`", row[0])]
            found.append((number, names, row[1]))
    return found


def inline_quotes(text):
    """(line number, name, value) of each "`name` (default X)" in the text."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        found += [(number, name, value) for name, value in INLINE.findall(line)]
    return found


def same(shown, default):
    """Whether a page's words `shown` state the code's `default`."""
    shown = shown.strip().strip("`").strip()
    if default is None:
        return shown.lower() in ("null", "none") or shown.startswith("unset")
    if isinstance(default, bool):
        return shown.lower() == str(default).lower()
    if isinstance(default, (int, float)):
        return number(shown) == default
    if isinstance(default, str):  # as written, or as JSON ("INFO")
        return shown == default or shown == json.dumps(default)
    return json.dumps(default, ensure_ascii=False) in shown


def number(shown):
    """ "2,000" -> 2000.0, "30 s" -> 30.0, "2 MiB" -> 2097152.0; None if no number."""
    found = NUMBER.match(shown)
    if not found:
        return None
    after = shown[found.end() :].split()
    return float(found.group().replace(",", "")) * UNITS.get(after[0] if after else "", 1)


def split_values(cell, count):
    """A row's default cell as one value per name ("0.7, 512"); one cell
    that quotes a list or sentence stays whole."""
    if count == 1:
        return [cell]
    return [value.strip() for value in cell.split(",")]


def quotes():
    """(where, name, shown) for every quoted default of a known setting."""
    found = []
    for page in PAGES:
        text, where = page.read_text(), page.relative_to(ROOT)
        for number, names, cell in table_quotes(text):
            values = split_values(cell, len(names))
            known = [name for name in names if name in CODE]
            if known:
                assert len(values) == len(names), (f"{where}:{number}", names, cell)
                found += [
                    (f"{where}:{number}", name, value)
                    for name, value in zip(names, values, strict=True)
                    if name in CODE
                ]
        for number, name, value in inline_quotes(text):
            if name in CODE:
                found.append((f"{where}:{number}", name, value))
    return found


def test_the_scan_finds_the_quoted_defaults():
    found = {name for _, name, _ in quotes()}
    # The agent settings' table (replies.md), the configuration table, lines.
    assert {"qa_threshold", "passage_threshold", "clarify_enabled"} <= found
    assert {"replies.debounce_seconds", "MEDIA_POLL_SECONDS", "telegram.poll_seconds"} <= found


def test_every_quoted_default_is_the_codes():
    wrong = [
        (where, name, shown, CODE[name])
        for where, name, shown in quotes()
        if not same(shown, CODE[name])
    ]
    assert wrong == []


@pytest.mark.parametrize(
    "page, name",
    [
        ("| Setting | Default | |\n|---|---|---|\n| `qa_threshold` | 0.5 | x |\n", "qa_threshold"),
        ("| Key | Default |\n|---|---|\n| `a`, `qa_margin` | 1, 0.9 |\n", "qa_margin"),
        ("The agent's `qa_threshold` (default 0.38) decides.", "qa_threshold"),
        ("every `telegram.poll_seconds` (5 s) for each", "telegram.poll_seconds"),
        ("| Key | Default |\n|---|---|\n| `MEDIA_DIR` | `files` |\n", "MEDIA_DIR"),
        ("| Key | Default |\n|---|---|\n| `clarify_enabled` | false |\n", "clarify_enabled"),
        (
            "| Key (`[webhooks]` ...) | Default |\n|---|---|\n| `timeout_seconds` | 5 |\n",
            "webhooks.timeout_seconds",
        ),
        (
            "| Key | Default |\n|---|---|\n| `REPLIES_MODEL_MAX_RESPONSE_BYTES` | 2 KiB |\n",
            "REPLIES_MODEL_MAX_RESPONSE_BYTES",
        ),
    ],
)
def test_a_wrong_default_on_a_page_is_found(page, name):
    quoted = [(n, v) for _, n, v in inline_quotes(page)]
    quoted += [
        (n, v)
        for _, names, cell in table_quotes(page)
        for n, v in zip(names, split_values(cell, len(names)), strict=True)
    ]
    [shown] = [value for quoted_name, value in quoted if quoted_name == name]
    assert not same(shown, CODE[name])
