"""The website widget in a real browser: `agent-platform serve` (gunicorn and
its scheduler, as a self-hoster runs it) on one loopback port, a plain HTML
page that embeds the snippet on another (so every call is cross-origin, as on
a customer's site), and Debian's headless Chromium driven by Selenium.

Chromium and its driver come from Debian's packages (`chromium`,
`chromium-driver`), which .ci/run installs. A screenshot of the open widget
is saved in the test's directory; with UPDATE_DOCS_SCREENSHOT=1 it also
replaces docs/img/widget.png (a plain run must not change tracked files)."""

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from loopback import QuietHandler, serving
from test_cli import free_port
from test_cli import serving as serve

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "Do you deliver on Sundays?"
ANSWER = "Yes, we deliver every day from 11:00 to 23:00, Sundays included."
READ_TEXTS = """
const host = document.getElementById("agent-platform-widget");
if (!host) return [];
return Array.from(host.shadowRoot.querySelectorAll(".msg." + arguments[0]), (n) => n.innerText);
"""
COST = ("How much does delivery cost?", "Delivery costs $5 within the city.")
AREA = ("Which areas do you deliver to?", "We deliver within 10 km of the shop.")
HOURS = ("What are your opening hours?", "We open every day from 11am to 11pm.")
# Pasted before the snippet on the shop's page: counts the widget's polls.
POLL_COUNTER = """<script>
window.__polls = 0;
var realFetch = window.fetch;
window.fetch = function (url, options) {
  var method = (options && options.method) || "GET";
  if (method === "GET" && /\\/api\\/messages/.test(String(url))) window.__polls++;
  return realFetch.apply(this, arguments);
};
</script>"""
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script> hi'


@pytest.fixture
def service(tmp_path):
    """The service, answering at once; (base URL, API session)."""
    yield from served(tmp_path, debounce_seconds=0)


@pytest.fixture
def debounced_service(tmp_path):
    """The service with its default wait of 2 s before the agent answers."""
    yield from served(tmp_path, debounce_seconds=2)


@pytest.fixture
def polling_service(tmp_path):
    """The service with push turned off (no stream per visitor): widgets poll."""
    yield from served(tmp_path, debounce_seconds=0, streams_per_visitor=0)


def served(tmp_path, debounce_seconds, streams_per_visitor=3):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    environ = {
        **os.environ,
        "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "widget.db"),
        "AGENT_PLATFORM_SERVER_PUBLIC_URL": base,
        "AGENT_PLATFORM_REPLIES_DEBOUNCE_SECONDS": str(debounce_seconds),
        "AGENT_PLATFORM_MESSAGES_SEND_POLL_SECONDS": "0.2",
        "AGENT_PLATFORM_WIDGET_STREAMS_PER_VISITOR": str(streams_per_visitor),
        # A stream finds the page gone (a reload, another page, the browser
        # closed) at its next write, so it writes often.
        "AGENT_PLATFORM_WIDGET_STREAM_HEARTBEAT_SECONDS": "1",
    }
    with serve(["--port", str(port)], environ, port) as (base, lines):
        api = requests.Session()
        api.headers["x-api-key"] = lines[1].strip()
        yield base, api


def call(api, method, url, body=None, status=200):
    response = api.request(method, url, json=body, timeout=10)
    assert response.status_code == status, response.text
    return response.json()["data"]


@pytest.fixture
def browser():
    driver = chromium(1100, 760)
    try:
        yield driver
    finally:
        driver.quit()


@contextmanager
def shop_page():
    """A plain page of a shop, on its own origin, that pastes `snippet[0]`
    before </body>; yields (its URL, the one-item list to put the snippet in)."""
    snippet = [""]

    class Page(QuietHandler):
        def do_GET(self):
            html = (
                "<!doctype html><html><head><meta charset='utf-8'><title>Loja da Ana</title>"
                "</head><body style='font-family:sans-serif;background:#f4f1ea;margin:40px'>"
                "<h1>Loja da Ana</h1><p>Fresh bread and pastries, delivered.</p>"
                f"{snippet[0]}</body></html>"
            )
            self.reply(200, "text/html; charset=utf-8", html.encode())

    with serving(Page) as url:
        yield url, snippet


def website_channel(service, agent, origin):
    """A website channel for `origin`, connected to `agent`: (id, snippet)."""
    base, api = service
    settings = {
        "allowed_origins": [origin],
        "title": "Ana · Loja da Ana",
        "greeting": "Hi! Ask me anything about our bakery.",
        "primary_color": "#8a4b2a",
        "launcher_text": "Chat with Ana",
    }
    body = {"name": "Site", "type": "website", "settings": settings}
    channel = call(api, "POST", f"{base}/v1/channels", body, 201)["id"]
    call(api, "POST", f"{base}/v1/channels/{channel}/connect", {"agent_id": agent})
    return channel, call(api, "GET", f"{base}/v1/channels/{channel}/widget")["snippet"]


class Widget:
    """The widget as a visitor uses it: inside its shadow root."""

    def __init__(self, driver):
        self.driver = driver

    def part(self, selector):
        host = WebDriverWait(self.driver, 15).until(
            lambda d: d.find_element(By.ID, "agent-platform-widget")
        )
        return host.shadow_root.find_element(By.CSS_SELECTOR, selector)

    def texts(self, kind):
        """The shown text of each message of `kind`, read in one script: the
        widget replaces a message's element as it is stored (a pending
        bubble becomes the stored message), so elements found in one call
        may be gone by the next."""
        return self.driver.execute_script(READ_TEXTS, kind)

    def open(self):
        self.part(".launcher").click()
        WebDriverWait(self.driver, 5).until(lambda d: self.part(".panel").is_displayed())

    def say(self, text):
        self.part("textarea").send_keys(text)
        self.part("button.send").click()

    def choices(self):
        """The buttons under the agent's messages, in order."""
        root = self.driver.find_element(By.ID, "agent-platform-widget").shadow_root
        return root.find_elements(By.CSS_SELECTOR, ".log button.choice")

    def wait_for(self, kind, text, seconds=15):
        WebDriverWait(self.driver, seconds).until(
            lambda d: any(text in shown for shown in self.texts(kind)),
            f"no {kind} message with {text!r}; shown: {self.texts(kind)}",
        )


def test_a_page_not_allowed_hears_why_in_its_console(service, browser):
    """The widget pasted on a page whose origin the channel does not allow:
    nothing shows, and the page's console says why and what to do (not
    only the browser's CORS complaint)."""
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    with shop_page() as (page_url, snippet):
        channel, snippet[0] = website_channel(service, agent, "https://shop.example.com")
        browser.get(page_url)
        said = []

        def told(driver):
            said.extend(entry["message"] for entry in driver.get_log("browser"))
            return any("Agent Platform widget" in line for line in said)

        WebDriverWait(browser, 15).until(told, f"nothing in the console: {said}")
    line = next(line for line in said if "Agent Platform widget" in line)
    assert f"Origin {page_url.rstrip('/')} may not use the widget of channel {channel}" in line
    assert "Allowed sites" in line and "widget.allow_localhost" in line
    assert not browser.find_elements(By.ID, "agent-platform-widget")


def test_a_visitor_answers_the_agents_question_with_a_button(service, browser, tmp_path):
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    for question, answer in (COST, AREA, HOURS):
        qa = {"type": "qa", "question": question, "answer": answer}
        call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    with shop_page() as (page_url, snippet):
        channel, snippet[0] = website_channel(service, agent, page_url)
        browser.get(page_url)
        widget = Widget(browser)
        widget.open()
        widget.say("do you deliver?")
        widget.wait_for("agent", "Do you mean:")
        WebDriverWait(browser, 15).until(lambda d: len(widget.choices()) == 3)
        assert [(c.text, c.is_enabled()) for c in widget.choices()] == [
            (COST[0], True),
            (AREA[0], True),
            ("None of these", True),
        ]
        shot = tmp_path / "widget-buttons.png"
        browser.save_screenshot(str(shot))
        assert shot.read_bytes().startswith(b"\x89PNG")
        if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
            shutil.copyfile(shot, ROOT / "docs" / "img" / "widget-buttons.png")
        widget.choices()[1].click()
        widget.wait_for("visitor", AREA[0])
        widget.wait_for("agent", AREA[1])
        assert [c.is_enabled() for c in widget.choices()] == [False] * 3
        # Pressing again sends nothing: one press, one message.
        browser.execute_script("arguments[0].click()", widget.choices()[0])
        assert widget.texts("visitor") == ["do you deliver?", AREA[0]]
        # Asked again, only the newest question's buttons are on; a message
        # typed instead of a press turns them off too.
        widget.say("do you deliver?")
        WebDriverWait(browser, 15).until(lambda d: len(widget.choices()) == 6)
        assert [c.is_enabled() for c in widget.choices()] == [False] * 3 + [True] * 3
        widget.say(HOURS[0])
        widget.wait_for("agent", HOURS[1])
        assert [c.is_enabled() for c in widget.choices()] == [False] * 6

    [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
    chat = f"{base}/v1/conversations/{conversation['id']}"
    clarifications = call(api, "GET", f"{chat}/clarifications")
    assert [c["status"] for c in clarifications] == ["chosen", "other"]
    messages = call(api, "GET", f"{chat}/messages?order=asc")
    assert [m["text"] for m in messages if m["sender_type"] == "contact"] == [
        "do you deliver?",
        AREA[0],
        "do you deliver?",
        HOURS[0],
    ]


def test_a_visitor_chats_with_the_agent_and_a_human(service, browser, tmp_path):
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    with shop_page() as (page_url, snippet):
        channel, snippet[0] = website_channel(service, agent, page_url)
        browser.get(page_url)
        widget = Widget(browser)
        assert widget.part(".launcher").text == "Chat with Ana"
        widget.open()
        assert widget.texts("greeting") == ["Hi! Ask me anything about our bakery."]
        widget.say(QUESTION)
        widget.wait_for("visitor", QUESTION)
        widget.wait_for("agent", ANSWER)

        [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
        chat = f"{base}/v1/chats/{conversation['id']}/handoff"
        call(api, "POST", chat, {"assigned_to": "rui@example.com"})
        human = f"{base}/v1/conversations/{conversation['id']}/messages"
        call(api, "POST", human, {"text": "Hi, this is Rui from the shop."}, 201)
        widget.wait_for("human", "Hi, this is Rui from the shop.")

        widget.say(HOSTILE)
        widget.wait_for("visitor", HOSTILE)
        call(api, "POST", human, {"text": "<b onmouseover=alert(1)>bold?</b>"}, 201)
        widget.wait_for("human", "<b onmouseover=alert(1)>bold?</b>")
        assert browser.execute_script("return window.__pwned === undefined")
        root = browser.find_element(By.ID, "agent-platform-widget").shadow_root
        assert root.find_elements(By.CSS_SELECTOR, ".log img, .log script, .log b") == []

        shot = tmp_path / "widget.png"
        browser.save_screenshot(str(shot))
        assert shot.read_bytes().startswith(b"\x89PNG")
        if os.environ.get("UPDATE_DOCS_SCREENSHOT") == "1":
            shutil.copyfile(shot, ROOT / "docs" / "img" / "widget.png")

        browser.refresh()
        widget = Widget(browser)
        widget.open()
        widget.wait_for("agent", ANSWER)
        assert widget.texts("visitor") == [QUESTION, HOSTILE]
        human_texts = ["Hi, this is Rui from the shop.", "<b onmouseover=alert(1)>bold?</b>"]
        assert [text.split("\n")[-1] for text in widget.texts("human")] == human_texts

    # The hosted page (page_url, the QR link): only the chat, open, on the
    # service's own origin, so another visitor there.
    browser.get(call(api, "GET", f"{base}/v1/channels/{channel}/widget")["page_url"])
    hosted = Widget(browser)
    assert hosted.part(".panel").is_displayed()
    assert (
        hosted.driver.find_element(By.ID, "agent-platform-widget").shadow_root.find_elements(
            By.CSS_SELECTOR, ".launcher"
        )
        == []
    )
    hosted.say(QUESTION)
    hosted.wait_for("agent", ANSWER)
    assert hosted.texts("human") == []

    messages = call(api, "GET", f"{base}/v1/conversations/{conversation['id']}/messages?order=asc")
    assert [m["text"] for m in messages if m["sender_type"] == "contact"] == [QUESTION, HOSTILE]
    statuses = {m["text"]: m["status"] for m in messages if m["direction"] == "outbound"}
    assert statuses[ANSWER] == "read"  # the visitor had the panel open on it


@contextmanager
def gateway(service_base, lose=b""):
    """A reverse proxy in front of the service, as a site may put one; it
    buffers answers, so it refuses event streams (503). The first message a
    visitor sends whose body holds `lose` reaches the service and is stored,
    but the proxy answers it 502, as one whose wait for the service ran out
    would: the visitor cannot tell it was stored."""
    failed = []

    class Gateway(QuietHandler):
        def forward(self):
            if "/api/events" in self.path:  # it would hold the stream back: it refuses it
                self.reply(503, "text/html", b"<h1>503 Service Unavailable</h1>")
                return
            length = int(self.headers.get("Content-Length") or 0)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
            body = self.rfile.read(length)
            answer = requests.request(
                self.command, service_base + self.path, headers=headers, data=body, timeout=10
            )
            message = self.command == "POST" and self.path.endswith("/api/messages")
            if message and lose in body and not failed:
                failed.append(answer.status_code)
                self.reply(502, "text/html", b"<h1>502 Bad Gateway</h1>")
                return
            kept = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_HEADERS}
            kept.pop("Content-Type", None)
            self.reply(
                answer.status_code, answer.headers.get("Content-Type", ""), answer.content, kept
            )

        do_OPTIONS = do_GET = do_POST = forward

    with serving(Gateway) as url:
        yield url, failed


HOP_HEADERS = {"host", "connection", "keep-alive", "content-length", "transfer-encoding"}


def test_a_message_sent_again_after_a_lost_answer_is_stored_once(service, browser):
    """The service stored the visitor's message, but the answer was lost on
    the way (a proxy's 502): the widget puts the text back, and sent again
    it keeps its client_message_id, so the service stores it once and the
    agent answers once."""
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    with shop_page() as (page_url, snippet), gateway(base) as (proxy, failed):
        channel, pasted = website_channel(service, agent, page_url)
        snippet[0] = pasted.replace(base, proxy)
        browser.get(page_url)
        widget = Widget(browser)
        widget.open()
        widget.say(QUESTION)
        WebDriverWait(browser, 10).until(lambda d: widget.part(".error").text)
        assert failed == [201]  # stored, though the visitor was told otherwise
        assert widget.part("textarea").get_attribute("value") == QUESTION
        widget.part("button.send").click()
        widget.wait_for("agent", ANSWER)
        assert widget.texts("visitor") == [QUESTION]
        assert widget.part(".error").text == ""

    [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
    messages = call(api, "GET", f"{base}/v1/conversations/{conversation['id']}/messages")
    assert sorted(m["sender_type"] for m in messages) == ["agent", "contact"]


def test_a_press_sent_again_after_a_lost_answer_is_stored_once(debounced_service, browser):
    """As a message: the press the service stored but whose answer was lost
    is pressed again with its id, and counts once. The agent waits its
    default 2 s before answering, so its question is still open then, and a
    press with a new id would be a second message."""
    service = debounced_service
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    for question, answer in (COST, AREA, HOURS):
        qa = {"type": "qa", "question": question, "answer": answer}
        call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    with shop_page() as (page_url, snippet), gateway(base, b'"choice"') as (proxy, failed):
        channel, pasted = website_channel(service, agent, page_url)
        snippet[0] = pasted.replace(base, proxy)
        browser.get(page_url)
        widget = Widget(browser)
        widget.open()
        widget.say("do you deliver?")
        WebDriverWait(browser, 15).until(lambda d: len(widget.choices()) == 3)
        widget.choices()[1].click()
        WebDriverWait(browser, 10).until(lambda d: widget.part(".error").text)
        assert failed == [201]
        WebDriverWait(browser, 10).until(lambda d: widget.choices()[1].is_enabled())
        widget.choices()[1].click()
        widget.wait_for("agent", AREA[1])
        assert widget.texts("visitor") == ["do you deliver?", AREA[0]]

    [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
    chat = f"{base}/v1/conversations/{conversation['id']}"
    messages = call(api, "GET", f"{chat}/messages?order=asc")
    contact = [m["text"] for m in messages if m["sender_type"] == "contact"]
    assert contact == ["do you deliver?", AREA[0]]
    assert [m["text"] for m in messages].count(AREA[1]) == 1


def trained_agent(service):
    base, api = service
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana"}, 201)["id"]
    qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
    call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
    return agent


def answered_by_agent_and_human(service, browser, page_url, channel):
    """The visitor asks; the agent answers; a person takes over and writes."""
    base, api = service
    browser.get(page_url)
    widget = Widget(browser)
    widget.open()
    widget.say(QUESTION)
    widget.wait_for("agent", ANSWER)
    [conversation] = call(api, "GET", f"{base}/v1/conversations?channel_id={channel}")
    call(api, "POST", f"{base}/v1/chats/{conversation['id']}/handoff")
    human = f"{base}/v1/conversations/{conversation['id']}/messages"
    call(api, "POST", human, {"text": "Hi, this is Rui from the shop."}, 201)
    widget.wait_for("human", "Hi, this is Rui from the shop.")
    return browser.execute_script("return window.__polls")


def test_the_reply_and_a_humans_message_are_pushed(service, browser):
    with shop_page() as (page_url, snippet):
        channel, pasted = website_channel(service, trained_agent(service), page_url)
        snippet[0] = POLL_COUNTER + pasted
        # Not one poll: the stream brought both.
        assert answered_by_agent_and_human(service, browser, page_url, channel) == 0


def test_with_push_turned_off_the_widget_polls(polling_service, browser):
    service = polling_service
    with shop_page() as (page_url, snippet):
        channel, pasted = website_channel(service, trained_agent(service), page_url)
        snippet[0] = POLL_COUNTER + pasted
        assert answered_by_agent_and_human(service, browser, page_url, channel) > 0


def test_behind_a_proxy_that_refuses_streams_the_widget_polls(service, browser):
    base, _ = service
    with shop_page() as (page_url, snippet), gateway(base) as (proxy, _):
        channel, pasted = website_channel(service, trained_agent(service), page_url)
        snippet[0] = POLL_COUNTER + pasted.replace(base, proxy)
        assert answered_by_agent_and_human(service, browser, page_url, channel) > 0
