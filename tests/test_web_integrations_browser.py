"""The webhook pages in real Chromium against `agent-platform serve`
(private targets allowed, as for a local receiver): an admin adds a webhook
in the page for the contacts category, sees its secret once, a contact is
made through the API, and the delivery appears in the webhook's log with
the receiver's answer; at a phone's width nothing overflows the page, and
an agent-role person gets the 403 page."""

import json

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from inbox_served import call, cli, person_link, served, wait_for
from test_web_inbox_browser import no_csp_violations, welcome
from webhooks_helpers import Receiver, Reply


@pytest.fixture
def receiver():
    server = Receiver(default=Reply(status=202, body=b"got it"))
    yield server
    server.close()


@pytest.fixture
def service(tmp_path):
    settings = {
        "WEBHOOKS_ALLOW_PRIVATE_TARGETS": True,
        "WEBHOOKS_ALLOWED_PORTS": [],
        "WEBHOOKS_POLL_SECONDS": 0.2,
    }
    with served(tmp_path, **settings) as (base, api, environ, _graph):
        yield {"base": base, "api": api, "environ": environ}


@pytest.fixture
def browser():
    opened = chromium(width=390, height=844)  # a phone's width
    yield opened
    opened.quit()


def fits_the_width(browser):
    return browser.execute_script(
        "return document.documentElement.scrollWidth <= window.innerWidth"
    )


def test_a_webhook_made_in_the_page_logs_its_delivery(service, receiver, browser):
    base = service["base"]
    welcome(browser, person_link(service["environ"], "ana@example.com", "Ana"))
    browser.find_element(By.LINK_TEXT, "Webhooks & keys").click()
    url_field = WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "webhook-url"))
    url_field[0].send_keys(receiver.url)
    category = "//input[@name='events'][@value='contacts']"
    browser.find_element(By.XPATH, category).click()
    browser.find_element(By.XPATH, "//button[normalize-space()='Add webhook']").click()
    shown = WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "webhook-secret"))
    secret = shown[0].get_attribute("value")
    assert secret.startswith("whsec_")
    browser.find_element(By.PARTIAL_LINK_TEXT, "I have copied it").click()
    WebDriverWait(browser, 10).until(lambda b: "/app/webhooks/" in b.current_url)
    webhook_page = browser.current_url
    assert secret not in browser.page_source
    assert fits_the_width(browser)

    call(service["api"], "POST", f"{base}/v1/contacts", {"name": "Bia"}, 201)
    wait_for(lambda: receiver.requests, "received the event")
    assert json.loads(receiver.requests[0].body)["event"] == "contact.created"

    def logged():
        browser.get(webhook_page)
        statuses = browser.find_elements(By.CSS_SELECTOR, ".attempt-status")
        return statuses and statuses[0].text == "202"

    wait_for(logged, "showed the delivery in the log", every=0.3)
    entry = browser.find_element(By.CSS_SELECTOR, ".webhook-delivery").text
    assert "contact.created" in entry and "succeeded" in entry and "got it" in entry
    assert secret not in browser.page_source
    assert fits_the_width(browser)
    browser.find_element(By.LINK_TEXT, "API keys").click()
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.ID, "key-name"))
    assert fits_the_width(browser)
    no_csp_violations(browser)


def test_an_agent_role_person_gets_the_403_page(service, browser):
    output = cli(service["environ"], "users", "create", "--workspace", "Default workspace",
                 "--email", "bo@example.com", "--name", "Bo", "--role", "agent")  # fmt: skip
    welcome(browser, output.strip().splitlines()[-1])
    assert not browser.find_elements(By.LINK_TEXT, "Webhooks & keys")
    for page in ("webhooks", "keys"):
        browser.get(f"{service['base']}/app/{page}")
        assert browser.find_element(By.TAG_NAME, "h1").text == "Not allowed"
        assert "for the admins of your workspace" in browser.page_source
    assert not browser.find_elements(By.ID, "webhook-url")
