"""A new user's whole journey in real Chromium against the real
`agent-platform serve`, with no terminal after `users create` (run as the
README says): open the printed link and choose a password; create an agent
and teach it a Q&A; create a website channel, connect the agent and copy
the snippet; paste it into a page of one's own on another loopback origin;
ask the Q&A's question in the widget and get the answer; then see that
conversation, question and answer, in the inbox. With
UPDATE_DOCS_SCREENSHOT=1 it saves docs/img/setup-agent.png,
docs/img/setup-channel.png and docs/img/setup-widget.png."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from chromium import chromium
from inbox_served import person_link, served, wait_for
from test_web_agents_browser import click, field, shows, until
from test_web_inbox_browser import messages, no_csp_violations, rows, save, welcome
from test_widget_browser import Widget, shop_page

QUESTION = "Do you deliver on Sundays?"
ANSWER = "Yes, we deliver every day from 11:00 to 23:00, Sundays included."
GREETING = "Hi! Ask me anything about our bakery."


@pytest.fixture
def browser():
    opened = chromium(width=1280, height=1000)
    yield opened
    opened.quit()


def whole_page(browser, name):
    """save() of the page at its full height (the preview is below the form)."""
    size = browser.get_window_size()
    width, height = size["width"], size["height"]
    full = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(width, full + (height - browser.execute_script("return innerHeight")))
    save(browser, name)
    browser.set_window_size(width, height)


def test_from_users_create_to_the_widget_answering_and_the_inbox(tmp_path, browser):
    with served(tmp_path) as (base, _api, environ, _graph), shop_page() as (shop, pasted):
        welcome(browser, person_link(environ, "you@example.com", "Your Name"))

        click(browser, "Agents")
        field(browser, "Name").send_keys("Ana Bot")
        click(browser, "Create agent")
        shows(browser, "main", "The agent is created")
        click(browser, "Knowledge")
        field(browser, "Question").send_keys(QUESTION)
        field(browser, "Answer").send_keys(ANSWER)
        click(browser, "Add")
        shows(browser, ".trainings", ANSWER)
        save(browser, "setup-agent.png")

        click(browser, "Channels")
        click(browser, "Website")
        field(browser, "Name").send_keys("My shop")
        browser.find_element(By.ID, "allowed_origins").send_keys(shop.rstrip("/"))
        browser.find_element(By.ID, "greeting").send_keys(GREETING)
        click(browser, "Create the channel")
        until(browser, lambda b: "/app/channels/" in b.current_url and "/new/" not in b.current_url)
        Select(browser.find_element(By.ID, "agent_id")).select_by_visible_text("Ana Bot")
        click(browser, "Connect")
        shows(browser, "main", "Connected to Ana Bot")
        click(browser, "Copy")
        copy = browser.find_element(By.CSS_SELECTOR, "button.copy[data-copy='snippet']")
        WebDriverWait(browser, 5).until(lambda b: copy.text == "Copied")
        snippet = browser.find_element(By.ID, "snippet").get_attribute("value")
        assert snippet.startswith(f'<script src="{base}/widget/')
        assert browser.find_element(By.ID, "preview-greeting").text == GREETING
        whole_page(browser, "setup-channel.png")
        no_csp_violations(browser)

        pasted[0] = snippet  # the user's own page, on another origin, with the snippet
        browser.get(shop)
        widget = Widget(browser)
        widget.open()
        assert widget.texts("greeting") == [GREETING]
        widget.say(QUESTION)
        widget.wait_for("agent", ANSWER)
        save(browser, "setup-widget.png")

        browser.get(f"{base}/app")
        [row] = wait_for(lambda: rows(browser), "listed the widget's conversation")
        assert "My shop · website" in row["text"] and f"Agent: {ANSWER}" in row["text"]
        browser.get(row["href"])
        wait_for(lambda: messages(browser) == [QUESTION, ANSWER], "showed the question and answer")
        no_csp_violations(browser)
