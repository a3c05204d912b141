"""The inbox without a mouse, in real Chromium against `agent-platform
serve`: sign in, open the customer waiting for a human, take over, reply
(the Graph API stand-in receives the text) and hand back with the Tab and
Enter keys alone, the focused control visibly outlined each time; and
every control of the list and of a conversation has a name a screen
reader reads out (its label, aria-label or text)."""

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from inbox_served import PASSWORD, call, customer_writes, person_link, served_shop, signed_in
from inbox_served import wait_for as waited
from test_web_inbox_browser import no_csp_violations, rows
from test_web_inbox_e2e import sent_texts

REPLY = "Yes, gift cards from 25 euros."
# Each focusable control without a name a screen reader could read out.
UNNAMED = """return Array.from(document.querySelectorAll(
    'a[href], button, input:not([type=hidden]), select, textarea, audio, video'))
  .filter(el => el.getClientRects().length > 0)
  .filter(el => {
    const labelled = Array.from(el.labels || [], label => label.textContent).join(' ');
    const named = labelled || el.getAttribute('aria-label') || el.textContent || el.value;
    return !(named || '').trim();
  })
  .map(el => el.outerHTML.slice(0, 160))"""
FOCUSED = """const el = document.activeElement;
return {tag: el.tagName.toLowerCase(), id: el.id, text: el.textContent.trim(),
        href: el.getAttribute('href') || '', outline: getComputedStyle(el).outlineStyle}"""


@pytest.fixture
def service(tmp_path):
    with served_shop(tmp_path) as started:
        yield started


@pytest.fixture
def browser():
    opened = chromium()
    yield opened
    opened.quit()


def keys(browser, *pressed):
    ActionChains(browser).send_keys(*pressed).perform()


def tab_to(browser, wanted, what, most=80):
    """Press Tab until the focused control is `wanted`; it shows its focus."""
    for _ in range(most):
        keys(browser, Keys.TAB)
        focused = browser.execute_script(FOCUSED)
        if wanted(focused):
            assert focused["outline"] != "none", f"{what} has no visible focus"
            return focused
    raise AssertionError(f"Tab never reached {what}")


def pressed_enter(browser, wanted, what):
    """Tab to a control and press Enter; the page it leads to has loaded."""
    tab_to(browser, wanted, what)
    old = browser.find_element("tag name", "html")
    keys(browser, Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda b: _replaced(old))


def _replaced(element):
    try:
        return element.tag_name is None
    except Exception:  # selenium's StaleElementReferenceException: a new page
        return True


def button(label):
    return lambda focused: focused["tag"] == "button" and focused["text"] == label


def unnamed(browser):
    return browser.execute_script(UNNAMED)


def test_take_over_reply_and_hand_back_with_the_keyboard_alone(service, browser):
    base, api, channel, graph = (service[k] for k in ("base", "api", "channel", "graph"))
    signed_in(person_link(service["environ"], "ana@example.com", "Ana Souza"))
    browser.get(f"{base}/app")
    WebDriverWait(browser, 10).until(lambda b: "/app/sign-in" in b.current_url)
    tab_to(browser, lambda focused: focused["id"] == "email", "the e-mail field")
    keys(browser, "ana@example.com", Keys.TAB, PASSWORD, Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda b: b.current_url == f"{base}/app")

    customer_writes(base, channel, "Do you sell gift cards?", "wamid.K1", name="Rita Lopes")
    [row] = waited(lambda: rows(browser), "listed Rita")
    assert unnamed(browser) == []
    path = row["href"].removeprefix(base)
    pressed_enter(browser, lambda focused: focused["href"] == path, "Rita's row")
    assert browser.current_url == row["href"]
    assert unnamed(browser) == []

    pressed_enter(browser, button("Take over"), "Take over")
    conversation_id = path.rsplit("/", 1)[-1]
    held = call(api, "GET", f"{base}/v1/conversations/{conversation_id}")
    assert held["status"] == "handoff" and held["assigned_to"] is not None
    tab_to(browser, lambda focused: focused["id"] == "reply-text", "the reply box")
    keys(browser, REPLY, Keys.TAB)
    assert browser.execute_script(FOCUSED)["text"] == "Send"
    old = browser.find_element("tag name", "html")
    keys(browser, Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda b: _replaced(old))
    waited(lambda: REPLY in sent_texts(graph), "sent the reply to the Graph API")
    assert unnamed(browser) == []  # the held conversation's controls too

    pressed_enter(browser, button("Hand back to the agent"), "Hand back")
    handed = call(api, "GET", f"{base}/v1/conversations/{conversation_id}")
    assert (handed["status"], handed["assigned_to"]) == ("open", None)
    no_csp_violations(browser)
