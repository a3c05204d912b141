"""The README is the front door: one screen of reading, and every page and
section it (or a docs page) links to exists."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
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
