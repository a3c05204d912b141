"""The inbox end to end, in real Chromium against `agent-platform serve`,
as a team uses it: sign in through the form; a WhatsApp customer the agent
cannot answer appears waiting for a human without reloading; take over,
reply (the Graph API stand-in receives exactly that text) and hand back
(the agent answers the next message, live); a colleague on the same
conversation sees the reply arrive and is refused the held conversation
with who holds it. And what is refused: an ended session, a form without
its CSRF token, an agent on an admin page; nothing changes then. With
UPDATE_DOCS_SCREENSHOT=1 it saves docs/img/inbox-list.png and
docs/img/inbox-conversation.png."""

import time

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from inbox_served import (
    KNOWN,
    PASSWORD,
    call,
    customer_writes,
    person_link,
    served,
    served_shop,
    shop,
    signed_in,
    visitor_writes,
    wait_for,
)
from test_web_inbox_browser import (
    mark,
    messages,
    no_csp_violations,
    rows,
    save,
    still_same_page,
)

REPLY = "Yes! Gift cards from €25, in the shop or by e-mail — shall I send you the link?"
DESKTOP = {"width": 1366, "height": 1060}
IDLE = 6  # seconds: long enough to open a page, short enough to wait out


@pytest.fixture
def service(tmp_path):
    with served_shop(tmp_path) as started:
        yield started


@pytest.fixture
def short_sessions(tmp_path):
    """An instance whose sessions end after IDLE seconds."""
    with served(tmp_path, INBOX_SESSION_IDLE_SECONDS=IDLE) as (base, api, environ, graph):
        yield {"base": base, "api": api, "environ": environ, "channel": shop(base, api)}


@pytest.fixture
def browsers():
    opened = []
    yield lambda **size: opened.append(chromium(**size)) or opened[-1]
    for browser in opened:
        browser.quit()


def person(service, email, name, role="admin"):
    """A user made with the CLI whose password is chosen: their e-mail."""
    signed_in(person_link(service["environ"], email, name, role=role))
    return email


def sign_in(browser, base, email):
    """Through the sign-in form, from the inbox's address."""
    browser.get(f"{base}/app")
    WebDriverWait(browser, 10).until(lambda b: "/app/sign-in" in b.current_url)
    browser.find_element(By.ID, "email").send_keys(email)
    browser.find_element(By.ID, "password").send_keys(PASSWORD)
    browser.find_element(By.XPATH, "//button[normalize-space()='Sign in']").click()
    WebDriverWait(browser, 10).until(lambda b: b.current_url == f"{base}/app")


def click(browser, label):
    """Press a button of the action area; the page it leads to has loaded."""
    old = browser.find_element(By.TAG_NAME, "html")
    # A live update may redraw the action area between finding the button
    # and pressing it (the reply's delivery, say): then the new one is pressed.
    WebDriverWait(browser, 10, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda b: b.find_element(By.XPATH, f"//button[normalize-space()='{label}']").click() or True
    )
    WebDriverWait(browser, 10).until(lambda b: _stale(old))


def _stale(element):
    try:
        return element.tag_name is None
    except Exception:  # selenium's StaleElementReferenceException: a new page
        return True
    return False


def notice(browser):
    return browser.find_element(By.CSS_SELECTOR, "#actions-region .notice").text


def authored(browser):
    """(author, role, text) of each message of the open thread."""
    return browser.execute_script(
        """return Array.from(document.querySelectorAll('#thread-region .msg'), m => [
            m.querySelector('.msg-author').firstChild.textContent.trim(),
            m.querySelector('.role').textContent,
            (m.querySelector('.msg-text') || {}).innerText])"""
    )


def conversation(service, conversation_id):
    return call(service["api"], "GET", f"{service['base']}/v1/conversations/{conversation_id}")


def user_id(service, email):
    users = call(service["api"], "GET", f"{service['base']}/v1/users")
    return next(user["id"] for user in users if user["email"] == email)


def sent_texts(graph):
    return [body["text"]["body"] for body in graph.sent() if body.get("type") == "text"]


def test_take_over_reply_and_hand_back_while_a_colleague_watches(service, browsers):
    base, api, channel, graph = (service[k] for k in ("base", "api", "channel", "graph"))
    site = _website(base, api)
    ana = person(service, "ana@example.com", "Ana Souza")
    bo = person(service, "bo@example.com", "Bo")
    # A morning's traffic: customers the agent answered, on two channels.
    customer_writes(base, channel, KNOWN[0], "wamid.E1", sender="5511900000002", name="Caio Mendes")
    visitor_writes(base, site, "Do you deliver on Sundays?", name="Marta Ruiz")
    first = browsers(**DESKTOP)
    sign_in(first, base, ana)
    answered = lambda: [r for r in rows(first) if "Agent:" in r["text"]]  # noqa: E731
    wait_for(lambda: len(answered()) == 2, "listed the morning's conversations")
    mark(first)

    # The agent knows nothing of gift cards: it answers its fallback and hands off.
    customer_writes(base, channel, "Do you sell gift cards?", "wamid.E2", name="Rita Lopes")
    [waiting] = wait_for(lambda: _waiting(first), "showed Rita waiting for a human")
    assert "Rita Lopes" in waiting["text"] and still_same_page(first)
    assert rows(first)[0]["href"] == waiting["href"]  # on top
    save(first, "inbox-list.png")
    conversation_id = waiting["href"].rsplit("/", 1)[-1]
    first.find_element(By.CSS_SELECTOR, f"#list-region a[href$='{conversation_id}']").click()
    WebDriverWait(first, 10).until(lambda b: "Do you sell gift cards?" in messages(b))

    # A colleague opens it too, about to take it over.
    second = browsers()
    sign_in(second, base, bo)
    second.get(waiting["href"])
    second_take_over = second.find_element(By.XPATH, "//button[normalize-space()='Take over']")
    second.execute_script("arguments[0].focus()", second_take_over)

    click(first, "Take over")
    assert notice(first).startswith("You hold this conversation")
    held = conversation(service, conversation_id)
    assert (held["status"], held["assigned_to"]) == ("handoff", user_id(service, ana))
    wait_for(lambda: "Assigned to Ana Souza" in _thread_text(second), "showed Bo who holds it")
    click(second, "Take over")
    assert "Ana Souza already holds conversation" in notice(second)
    assert conversation(service, conversation_id)["assigned_to"] == user_id(service, ana)
    assert "Held by Ana Souza" in second.find_element(By.ID, "actions-region").text
    mark(second)

    first.find_element(By.ID, "reply-text").send_keys(REPLY)
    click(first, "Send")
    assert notice(first) == "Your reply is on its way to the customer."
    wait_for(lambda: REPLY in sent_texts(graph), "sent the reply to the Graph API")
    assert sent_texts(graph).count(REPLY) == 1
    [body] = [body for body in graph.sent() if body.get("text", {}).get("body") == REPLY]
    assert (body["to"], body["type"], body["text"]["body"]) == ("5511933334444", "text", REPLY)
    assert authored(first)[-1] == ["Ana Souza", "team", REPLY]
    wait_for(lambda: authored(second)[-1:] == [["Ana Souza", "team", REPLY]], "showed Bo the reply")
    assert still_same_page(second)
    last_delivery = "return Array.from(document.querySelectorAll('.delivery')).pop().innerText"
    wait_for(lambda: first.execute_script(last_delivery) == "Sent", "showed the reply sent")
    save(first, "inbox-conversation.png")

    click(first, "Hand back to the agent")
    assert notice(first) == "The agent answers this conversation again."
    handed = conversation(service, conversation_id)
    assert (handed["status"], handed["assigned_to"]) == ("open", None)
    mark(first)
    customer_writes(base, channel, KNOWN[0], "wamid.E3", name="Rita Lopes")
    # The agent's answer, as it answered Caio before.
    wait_for(lambda: sent_texts(graph).count(KNOWN[1]) == 2, "sent the agent's answer")
    wait_for(lambda: authored(first)[-1:] == [["Ana Bot", "agent", KNOWN[1]]], "showed the answer")
    assert still_same_page(first)
    no_csp_violations(first)
    no_csp_violations(second)


def test_an_ended_session_is_sent_to_sign_in_and_nothing_changes(short_sessions, browsers):
    base, channel = short_sessions["base"], short_sessions["channel"]
    customer_writes(base, channel, "Do you sell gift cards?", "wamid.S1", name="Rita Lopes")
    [conversation_id] = wait_for(lambda: _in_handoff(short_sessions), "handed Rita off")
    browser, ana = browsers(), person(short_sessions, "ana@example.com", "Ana Souza")
    sign_in(browser, base, ana)
    # The session began before this and is not touched again within IDLE
    # (on a busy machine signing in itself can take seconds).
    signed_in = time.monotonic()
    browser.get(f"{base}/app/conversations/{conversation_id}")
    assert browser.find_element(By.XPATH, "//button[normalize-space()='Take over']")
    time.sleep(max(0.0, signed_in + IDLE + 0.5 - time.monotonic()))  # the session ends
    click(browser, "Take over")
    signed_out = f"{base}/app/sign-in?next=/app/conversations/{conversation_id}"
    WebDriverWait(browser, 10).until(lambda b: b.current_url == signed_out)
    assert browser.find_element(By.ID, "email").is_displayed()
    unchanged = conversation(short_sessions, conversation_id)
    assert (unchanged["status"], unchanged["assigned_to"]) == ("handoff", None)
    no_csp_violations(browser)


def test_a_form_without_its_token_and_an_agent_on_the_team_page_are_refused(service, browsers):
    base, channel = service["base"], service["channel"]
    browser = browsers()
    sign_in(browser, base, person(service, "ana@example.com", "Ana Souza"))
    customer_writes(base, channel, "Do you sell gift cards?", "wamid.C1", name="Rita Lopes")
    [waiting] = wait_for(lambda: _waiting(browser), "showed Rita waiting")
    conversation_id = waiting["href"].rsplit("/", 1)[-1]
    browser.get(waiting["href"])
    browser.execute_script(
        "document.querySelectorAll('#actions-region input[name=csrf_token]')"
        ".forEach(field => field.remove())"
    )
    click(browser, "Take over")
    assert "This form has expired or did not come from this site" in _body(browser)
    unchanged = conversation(service, conversation_id)
    assert (unchanged["status"], unchanged["assigned_to"]) == ("handoff", None)

    agent = browsers()
    sign_in(agent, base, person(service, "caio@example.com", "Caio", role="agent"))
    assert agent.find_elements(By.LINK_TEXT, "Team") == []
    agent.get(f"{base}/app/team")
    assert "This page is for the admins of your workspace." in _body(agent)
    assert agent.find_elements(By.XPATH, "//button[normalize-space()='Invite']") == []
    no_csp_violations(browser)
    no_csp_violations(agent)


def _website(base, api):
    """A website channel with the same agent (already connected to WhatsApp)."""
    [agent] = call(api, "GET", f"{base}/v1/agents")
    qa = {"type": "qa", "question": "Do you deliver on Sundays?",
          "answer": "We deliver every day, Sundays included, from 10 am to 4 pm."}  # fmt: skip
    call(api, "POST", f"{base}/v1/agents/{agent['id']}/trainings", qa, 201)
    settings = {"allowed_origins": ["https://shop.example"], "title": "Loja da Ana"}
    body = {"name": "Website", "type": "website", "settings": settings}
    site = call(api, "POST", f"{base}/v1/channels", body, 201)["id"]
    call(api, "POST", f"{base}/v1/channels/{site}/connect", {"agent_id": agent["id"]})
    return site


def _in_handoff(service):
    found = call(service["api"], "GET", f"{service['base']}/v1/conversations")
    return [found["id"] for found in found if found["status"] == "handoff"]


def _waiting(browser):
    return [row for row in rows(browser) if row["badge"] == "Needs a human"]


def _thread_text(browser):
    return browser.find_element(By.ID, "thread-region").text


def _body(browser):
    return browser.find_element(By.TAG_NAME, "body").text
