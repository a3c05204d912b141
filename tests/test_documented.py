"""Everything a user can meet is documented: every error code the code raises,
every event name, every setting with its default (docs/configuration.md;
config.example.toml is checked by test_config)."""

import json
import re
from pathlib import Path

import agent_platform
from agent_platform import config_rules
from agent_platform.config import DEFAULTS
from agent_platform.events.catalog import EVENTS
from agent_platform.scopes import SCOPES

ROOT = Path(__file__).resolve().parents[1]
# The README and every page under docs/.
README = "\n".join(
    path.read_text() for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
)


def raised_error_codes():
    codes = set()
    for path in Path(agent_platform.__file__).parent.rglob("*.py"):
        codes.update(re.findall(r'\bcode\s*=\s*"([A-Z][A-Z0-9_]+)"', path.read_text()))
    return codes


def test_every_error_code_is_in_the_readme():
    codes = raised_error_codes()
    assert len(codes) > 20  # the scan found the codes at all
    assert sorted(code for code in codes if not re.search(rf"\b{code}\b", README)) == []


def test_every_event_name_is_in_the_readme():
    assert sorted(name for name in EVENTS if f"`{name}`" not in README) == []


def test_every_scope_is_in_the_readme():
    missing = [s for s in SCOPES if s not in README and s.split(":")[0] + ":*" not in README]
    assert missing == []


def documented_settings():
    """docs/configuration.md's table rows: {key: [default, allowed, meaning]}."""
    rows = {}
    for line in (ROOT / "docs" / "configuration.md").read_text().splitlines():
        row = re.match(r"\| `([a-z0-9_.]+)` \| (.*) \|$", line)
        if row:
            cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row.group(2))]
            rows[row.group(1)] = cells
    return rows


def test_every_setting_is_in_the_configuration_page_with_its_default():
    documented = documented_settings()
    keys = {config_rules.toml_name(key): default for key, default in DEFAULTS.items()}
    assert sorted(set(keys) - set(documented)) == []  # every key has a row
    assert sorted(set(documented) - set(keys)) == []  # and no row a key that is gone
    for name, default in keys.items():
        shown, allowed, meaning = documented[name]
        expected = "unset" if default is None else f"`{json.dumps(default)}`"
        assert shown.startswith(expected), (name, shown)
        assert allowed and meaning, name
