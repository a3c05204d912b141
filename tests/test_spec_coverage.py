"""docs/spec-coverage.md cannot drift from the service: every operation it
marks done (or done by a choice) is routed with that method, and every
event of the catalogue has a row saying when it is raised."""

import re
from pathlib import Path

from agent_platform.events.catalog import EVENTS

PAGE = (Path(__file__).resolve().parents[1] / "docs" / "spec-coverage.md").read_text()
OPERATION = re.compile(r"`(GET|POST|PUT|PATCH|DELETE) (/[^` ]*)`")


def rows():
    for line in PAGE.splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            yield [cell.strip() for cell in line.strip("|").split("|")]


def shape(path):
    return re.sub(r"<[^>]+>|\{[^}]+\}", "{}", path)


def test_every_operation_marked_done_is_routed(app):
    routed = {
        (method, shape(rule.rule)) for rule in app.url_map.iter_rules() for method in rule.methods
    }
    claimed = [
        (method, shape(path))
        for cells in rows()
        if cells[0].isdigit() and cells[-1].startswith(("done", "choice"))
        for method, path in OPERATION.findall(cells[2])
        if "..." not in path
    ]
    assert len(claimed) > 100  # the table was read at all
    assert sorted(set(claimed) - routed) == []


def test_every_event_has_a_row():
    named = {cells[0].strip("`") for cells in rows() if cells[0].startswith("`")}
    assert sorted(set(EVENTS) - named) == []
    assert sorted(named - set(EVENTS)) == []


def test_the_webhooks_page_says_when_each_event_is_raised():
    page = (Path(__file__).resolve().parents[1] / "docs" / "webhooks.md").read_text()
    events = page.split("\n## Events\n", 1)[1]
    said = {}
    for line in events.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2] and not cells[2].startswith("---"):
            for name in re.findall(r"`([a-z_]+\.[a-z_]+)`", cells[1]):
                said[name] = cells[2]
    assert sorted(set(EVENTS) - set(said)) == []
    assert sorted(set(said) - set(EVENTS)) == []
