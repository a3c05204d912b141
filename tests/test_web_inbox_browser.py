"""The inbox in real Chromium against `agent-platform serve` with a
WhatsApp channel whose Graph API is the local stand-in: a customer's
message the agent cannot answer (it hands off) appears in the open list as
waiting for a human within a second, without reloading; the conversation
shows its thread; a second person on the same conversation sees a new
message arrive live; a customer's markup is text and never runs; and the
console has no Content-Security-Policy violation. (The docs' screenshots
are taken by test_web_inbox_e2e.py, with `save` below.)"""

import os
import time
from datetime import datetime

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from inbox_served import (
    KNOWN,
    PASSWORD,
    ROOT,
    call,
    customer_writes,
    person_link,
    served_shop,
    wait_for,
)
from page_waits import settled

ATTACK = "<script>window.pwned = 1</script><img src=x onerror=window.pwned=2>"


@pytest.fixture
def service(tmp_path):
    with served_shop(tmp_path) as started:
        yield started


@pytest.fixture
def browsers():
    opened = []
    yield lambda **size: opened.append(chromium(**size)) or opened[-1]
    for browser in opened:
        browser.quit()


def welcome(browser, link):
    """Choose a password through the one-time link: signed in, on the inbox."""
    browser.get(link)
    for label in ("New password", "The same password again"):
        field = browser.find_element(By.XPATH, f"//label[normalize-space()='{label}']")
        browser.find_element(By.ID, field.get_attribute("for")).send_keys(PASSWORD)
    browser.find_element(By.XPATH, "//button[normalize-space()='Save and sign in']").click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith("/app"))


# Read in one script, as the live script may swap a region between two reads.
ROWS = """return Array.from(document.querySelectorAll('#list-region .row')).map(row => ({
    text: row.innerText, href: row.querySelector('a').href,
    badge: row.querySelector('.badge').textContent}))"""


def rows(browser):
    """Each row of the list: its text, link and state badge."""
    return browser.execute_script(ROWS)


def messages(browser):
    return browser.execute_script(
        "return Array.from(document.querySelectorAll('#thread-region .msg-text'), m => m.innerText)"
    )


def no_csp_violations(browser):
    logged = browser.get_log("browser")
    assert [e for e in logged if "Content Security Policy" in e["message"]] == [], logged


def mark(browser):
    """A flag only this page load holds: gone if the page reloads."""
    browser.execute_script("window.notReloaded = true")


def still_same_page(browser):
    return browser.execute_script("return window.notReloaded === true")


def handoff_moment(service, conversation_id):
    found = call(service["api"], "GET", f"{service['base']}/v1/conversations/{conversation_id}")
    started = found["handoff_started_at"]
    return datetime.fromisoformat(started.replace("Z", "+00:00")).timestamp()


def test_a_handoff_appears_live_and_two_people_see_new_messages(service, browsers):
    base, environ, channel = service["base"], service["environ"], service["channel"]
    ana = browsers()
    welcome(ana, person_link(environ, "ana@example.com", "Ana"))
    assert ana.find_element(By.TAG_NAME, "h1").text == "Inbox"
    assert "No conversations here." in ana.find_element(By.ID, "list-region").text
    mark(ana)

    # The agent knows nothing of this: it answers its fallback and hands off.
    customer_writes(base, channel, "Do you sell gift cards?", "wamid.B1", name="Rita Lopes")
    [row] = wait_for(lambda: _waiting(ana), "showed the conversation waiting")
    seen_at = time.time()
    link = row["href"]
    conversation_id = link.rsplit("/", 1)[-1].split("?")[0]
    assert seen_at - handoff_moment(service, conversation_id) < 1.0
    assert still_same_page(ana)
    assert "Rita Lopes" in row["text"] and "Agent: Sorry" in row["text"]  # its fallback
    waiting_tab = "return document.querySelector('#tabs-region a.waiting').innerText"
    wait_for(lambda: ana.execute_script(waiting_tab) == "Needs a human 1", "counted it")

    # A quieter conversation, answered by the agent, and one with markup.
    customer_writes(base, channel, KNOWN[0], "wamid.B2", sender="5511900000002", name="Caio")
    customer_writes(base, channel, ATTACK, "wamid.B3", sender="5511900000003", name="<b>Eve</b>")
    wait_for(lambda: len(rows(ana)) == 3, "listed three conversations")
    assert any("<b>Eve</b>" in row["text"] for row in rows(ana))

    ana.get(link)
    assert "Do you sell gift cards?" in messages(ana)
    bo = browsers()
    welcome(bo, person_link(environ, "bo@example.com", "Bo"))
    bo.get(link)
    mark(ana)
    mark(bo)
    customer_writes(base, channel, "Hello? Anyone there?", "wamid.B4", name="Rita Lopes")
    written = time.monotonic()
    for browser in (ana, bo):
        wait_for(lambda b=browser: "Hello? Anyone there?" in messages(b), "showed the new message")
        assert still_same_page(browser)
    assert time.monotonic() - written < 2.0  # both, one after the other
    no_csp_violations(ana)
    no_csp_violations(bo)


def test_a_customers_script_is_text_and_never_runs(service, browsers):
    base, environ, channel = service["base"], service["environ"], service["channel"]
    browser = browsers(width=390, height=800)  # a phone's width
    welcome(browser, person_link(environ, "ana@example.com", "Ana"))
    customer_writes(base, channel, ATTACK, "wamid.X1", name="<b>Eve</b>")
    wait_for(lambda: rows(browser), "listed the conversation")
    wait_for(lambda: "<b>Eve</b>" in rows(browser)[0]["text"], "showed the name as text")
    browser.get(rows(browser)[0]["href"])
    WebDriverWait(browser, 10).until(lambda b: ATTACK in messages(b))
    assert browser.execute_script("return window.pwned === undefined")
    assert browser.find_elements(By.CSS_SELECTOR, "#thread-region img") == []
    # At a phone's width the list gives way to the conversation, with a way back.
    # (read afresh: the live script may be swapping the regions meanwhile)
    list_pane, way_back = (By.CLASS_NAME, "list-pane"), (By.LINK_TEXT, "← All conversations")
    assert settled(browser, lambda b: not b.find_element(*list_pane).is_displayed())
    assert settled(browser, lambda b: b.find_element(*way_back).is_displayed())
    no_csp_violations(browser)


def _waiting(browser):
    return [row for row in rows(browser) if row["badge"] == "Needs a human"]


def save(browser, name):
    """The page as it is; into docs/img only when asked to (UPDATE_DOCS_SCREENSHOT=1)."""
    shot = browser.get_screenshot_as_png()
    assert shot.startswith(b"\x89PNG")
    if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
        (ROOT / "docs" / "img" / name).write_bytes(shot)
