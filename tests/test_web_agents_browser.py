"""The agent pages in real Chromium against `agent-platform serve`: an
admin creates an agent and a Q&A, asks it in the test chat and sees the
answer with its reason; a customer's question it could not answer, which a
person then answered, is turned into a Q&A on the gaps page, and the test
chat answers it by itself. The pages fit a phone's width, and the console
has no Content-Security-Policy violation."""

import re

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from conversations_helpers import WA_SETTINGS
from inbox_served import call, customer_writes, person_link, served, wait_for
from page_waits import settled
from test_web_inbox_browser import browsers, welcome  # noqa: F401  (fixture)

HOURS = ("When are you open?", "Every day from 9 am to 6 pm.")
GLUTEN = "Do you have gluten free pizza?"
GLUTEN_REPLY = "Yes, our gluten-free base is baked apart."


def until(browser, found):
    """found(browser) once truthy; a page still being replaced is waited out."""
    return settled(browser, found)


def field(browser, label_start):
    """The form field whose label starts with `label_start`."""
    path = f"//label[starts-with(normalize-space(), '{label_start}')]"
    labelled = lambda b: b.find_element(By.XPATH, path).get_attribute("for")  # noqa: E731
    return browser.find_element(By.ID, until(browser, labelled))


def click(browser, words):
    path = f"//*[self::a or self::button][normalize-space()='{words}']"
    until(browser, lambda b: b.find_element(By.XPATH, path)).click()


def ask(browser, question):
    """Send `question` in the test chat: the transcript's turn that answers it."""
    click(browser, "Test chat")
    field(browser, "Your message").send_keys(question)
    click(browser, "Send")
    return until(browser, lambda b: _turn_of(b, question))


def _turn_of(browser, question):
    turns = browser.find_elements(By.CSS_SELECTOR, ".test-chat > li")
    return turns[-1].text if turns and question in turns[-1].text else None


def shows(browser, css, words):
    """Wait for the next page to show `words` in `css` (the form's POST
    redirects: the page before it is still there a moment)."""
    found = lambda b: words in b.find_element(By.CSS_SELECTOR, css).text  # noqa: E731
    return until(browser, found)


def fits_the_width(browser):
    return browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )


def test_teach_the_agent_in_the_browser_and_try_it(tmp_path, browsers):  # noqa: F811
    with served(tmp_path) as (base, api, environ, _graph):
        browser = browsers(width=390, height=844)
        welcome(browser, person_link(environ, "ana@example.com", "Ana"))
        click(browser, "Agents")
        field(browser, "Name").send_keys("Pizza bot")
        click(browser, "Create agent")
        WebDriverWait(browser, 10).until(lambda b: "done=created" in b.current_url)
        agent_id = re.search(r"/app/agents/([^/?]+)", browser.current_url).group(1)
        assert fits_the_width(browser)

        click(browser, "Knowledge")
        field(browser, "Question").send_keys(HOURS[0])
        field(browser, "Answer").send_keys(HOURS[1])
        click(browser, "Add")
        assert shows(browser, ".trainings", HOURS[1])
        assert fits_the_width(browser)

        turn = ask(browser, "when do you open?")
        assert HOURS[1] in turn and "Why: Answered from a Q&A, score" in turn
        assert HOURS[0] in turn  # the training it answered from
        assert fits_the_width(browser)

        channel = {"name": "WhatsApp", "type": "whatsapp", "settings": WA_SETTINGS}
        channel_id = call(api, "POST", f"{base}/v1/channels", channel, 201)["id"]
        call(api, "POST", f"{base}/v1/channels/{channel_id}/connect", {"agent_id": agent_id})
        customer_writes(base, channel_id, GLUTEN, "wamid.gluten")
        conversations = f"{base}/v1/conversations"
        conversation = wait_for(lambda: call(api, "GET", conversations), "a conversation")[0]
        replies = f"{conversations}/{conversation['id']}/messages"
        wait_for(lambda: len(call(api, "GET", replies)) > 1, "the agent's fallback")
        call(api, "POST", replies, {"text": GLUTEN_REPLY}, 201)

        click(browser, "Gaps")
        answer = field(browser, "Answer")
        assert GLUTEN in field(browser, "Question").get_attribute("value")
        assert answer.get_attribute("value") == GLUTEN_REPLY
        answer.send_keys(" Ask for it when you order.")
        click(browser, "Turn into a Q&A")
        assert shows(browser, "#main", "answers that question by itself")

        turn = ask(browser, "gluten free pizza?")
        assert "Ask for it when you order." in turn and "Why: Answered from a Q&A" in turn
        logged = browser.get_log("browser")
        assert not [entry for entry in logged if "Content Security Policy" in entry["message"]]
