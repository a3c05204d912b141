"""A website channel set up in the browser, end to end, against the real
`agent-platform serve` in real Chromium: the admin creates it in the page,
watches the preview follow the form, connects the agent, takes the snippet,
pastes it into a shop's page on another loopback origin, and a visitor
there chats with the agent."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from chromium import chromium
from inbox_served import call, person_link, served
from page_waits import settled
from test_web_inbox_browser import no_csp_violations, welcome
from test_widget_browser import ANSWER, QUESTION, Widget, shop_page

GREETING = "Hi! Ask me <anything> about our bakery."
BROWN = "rgba(138, 75, 42, 1)"  # #8a4b2a as Chromium reports it


@pytest.fixture
def browsers():
    opened = []
    yield lambda **size: opened.append(chromium(**size)) or opened[-1]
    for browser in opened:
        browser.quit()


def fill(browser, field_id, value):
    field = browser.find_element(By.ID, field_id)
    field.clear()
    field.send_keys(value)


def shows(browser, element_id, words):
    """The element shows `words`, read afresh while a form's answer replaces the page."""
    return settled(browser, lambda b: b.find_element(By.ID, element_id).text == words)


def test_a_website_channel_made_in_the_page_answers_on_another_origin(tmp_path, browsers):
    with served(tmp_path) as (base, api, environ, _graph), shop_page() as (shop, snippet):
        agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana Bot"}, 201)["id"]
        qa = {"type": "qa", "question": QUESTION, "answer": ANSWER}
        call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)
        browser = browsers()
        welcome(browser, person_link(environ, "ana@example.com", "Ana"))

        browser.find_element(By.LINK_TEXT, "Channels").click()
        browser.find_element(By.LINK_TEXT, "Website").click()
        fill(browser, "name", "Site")
        fill(browser, "allowed_origins", shop.rstrip("/"))
        fill(browser, "greeting", GREETING)
        fill(browser, "primary_color", "#8a4b2a")
        fill(browser, "launcher_text", "Chat with Ana")
        # The preview follows the form before anything is saved, as text.
        assert shows(browser, "preview-greeting", GREETING)
        assert shows(browser, "preview-launcher", "Chat with Ana")
        heading = browser.find_element(By.ID, "preview-heading")
        assert heading.value_of_css_property("background-color") == BROWN
        browser.find_element(By.XPATH, "//button[normalize-space()='Create the channel']").click()

        WebDriverWait(browser, 10).until(lambda b: "/app/channels/" in b.current_url)
        assert shows(browser, "preview-greeting", GREETING)
        agents = settled(browser, lambda b: Select(b.find_element(By.ID, "agent_id")))
        agents.select_by_visible_text("Ana Bot")
        browser.find_element(By.XPATH, "//button[normalize-space()='Connect']").click()
        # The page is replaced by the form's answer: read it afresh until it says so.
        settled(browser, lambda b: "Connected to Ana Bot" in b.find_element(By.ID, "main").text)
        copy = browser.find_element(By.CSS_SELECTOR, "button.copy[data-copy='snippet']")
        assert copy.is_displayed()  # the page's script ran (no CSP refusal)
        snippet[0] = browser.find_element(By.ID, "snippet").get_attribute("value")
        assert snippet[0].startswith(f'<script src="{base}/widget/')
        no_csp_violations(browser)

        browser.get(shop)
        widget = Widget(browser)
        assert widget.part(".launcher").text == "Chat with Ana"
        widget.open()
        assert widget.texts("greeting") == [GREETING]
        widget.say(QUESTION)
        widget.wait_for("agent", ANSWER)


def test_the_channel_pages_fit_a_phones_width(tmp_path, browsers):
    with served(tmp_path) as (base, api, environ, _graph):
        browser = browsers(width=390, height=800)
        welcome(browser, person_link(environ, "ana@example.com", "Ana"))
        for path in ("/app/channels", "/app/channels/new/email", "/app/channels/new/website"):
            browser.get(base + path)
            width = browser.execute_script(
                "return [document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert width[0] <= width[1], (path, width)
