"""The channel docs read as guides: one page per network under
docs/channels/, each setting up, trying, going live and troubleshooting in
that order; docs/channels.md a short index linking every one; measurement
history and process internals kept to the internals pages."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDES = sorted((ROOT / "docs" / "channels").glob("*.md"))
STEPS = ["## Set up", "## Try it", "## Go live", "## Troubleshoot"]
# Pages for those who build or measure the service, not for those who run it.
INTERNALS = {"adapters.md", "benchmarks.md", "knowledge-matcher.md", "inbox-internals.md"}
INTERNAL_WORDS = re.compile(r"niceness|autogroup|CAP_SYS_ADMIN|blind split|\bblind[0-9]", re.I)


def test_there_is_a_guide_per_network():
    assert [path.name for path in GUIDES] == [
        "email.md",
        "telegram.md",
        "website.md",
        "whatsapp.md",
    ]


@pytest.mark.parametrize("guide", GUIDES, ids=lambda path: path.name)
def test_a_guide_sets_up_tries_goes_live_and_troubleshoots_in_order(guide):
    headings = [line for line in guide.read_text().splitlines() if line in STEPS]
    assert headings == STEPS


def test_the_channels_page_is_a_short_index_of_the_guides():
    index = (ROOT / "docs" / "channels.md").read_text()
    assert len(index.splitlines()) < 60
    for guide in GUIDES:
        assert f"(channels/{guide.name})" in index


def test_user_pages_keep_internals_out():
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [
        path.relative_to(ROOT).as_posix()
        for path in pages
        if path.name not in INTERNALS and INTERNAL_WORDS.search(path.read_text())
    ]
    assert found == []
