"""Every page an admin sets the service up with, in real Chromium against
`agent-platform serve` at a phone's width: none overflows the page. A
WhatsApp channel made in the page shows the callback URL and the verify
token to paste into Meta's dashboard, each with a working copy button; the
e-mail form's provider presets fill in the servers. A person with the agent
role gets the 403 page on each of them, and no link to them."""

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conversations_helpers import WA_SETTINGS
from inbox_served import call, person_link, served
from page_waits import settled
from test_web_inbox_browser import browsers, no_csp_violations, welcome  # noqa: F401  (fixture)

PHONE = {"width": 390, "height": 844}
ADMIN_LINKS = ("Agents", "Channels", "Webhooks & keys", "Team")


@pytest.fixture
def service(tmp_path):
    # A webhook to a loopback address, as for a local receiver.
    settings = {"WEBHOOKS_ALLOW_PRIVATE_TARGETS": True, "WEBHOOKS_ALLOWED_PORTS": []}
    with served(tmp_path, **settings) as (base, api, environ, _graph):
        yield {"base": base, "api": api, "environ": environ}


def admin_pages(service):
    """The path of each page of the admins' area, with one of each thing made."""
    base, api = service["base"], service["api"]
    agent = call(api, "POST", f"{base}/v1/agents", {"name": "Ana Bot"}, 201)["id"]
    qa = {"type": "qa", "question": "When are you open?", "answer": "From 9 to 6."}
    training = call(api, "POST", f"{base}/v1/agents/{agent}/trainings", qa, 201)["id"]
    site = {"name": "Site", "type": "website", "settings": {"greeting": "Hi!"}}
    channel = call(api, "POST", f"{base}/v1/channels", site, 201)["id"]
    hook = {"url": "http://127.0.0.1:9/hook", "events": ["contact.created"]}
    webhook = call(api, "POST", f"{base}/v1/webhooks", hook, 201)["id"]
    return [
        "/app/agents",
        f"/app/agents/{agent}",
        f"/app/agents/{agent}/knowledge",
        f"/app/agents/{agent}/knowledge/{training}",
        f"/app/agents/{agent}/gaps",
        f"/app/agents/{agent}/test-chat",
        "/app/channels",
        *(f"/app/channels/new/{kind}" for kind in ("whatsapp", "telegram", "email", "website")),
        f"/app/channels/{channel}",
        "/app/webhooks",
        f"/app/webhooks/{webhook}",
        "/app/keys",
        "/app/team",
    ]


def overflow(browser):
    """How many pixels the page is wider than the window (0: it fits)."""
    return browser.execute_script("return document.documentElement.scrollWidth - window.innerWidth")


def heading(browser):
    return settled(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text)


def fill(browser, field_id, value):
    browser.find_element(By.ID, field_id).send_keys(value)


def test_every_setup_page_fits_a_phones_width(service, browsers):  # noqa: F811
    base, paths = service["base"], ["/app", *admin_pages(service)]  # the inbox's list too
    browser = browsers(**PHONE)
    welcome(browser, person_link(service["environ"], "ana@example.com", "Ana"))
    for path in paths:
        browser.get(base + path)
        assert heading(browser) not in ("Not found", "Not allowed"), path
        assert overflow(browser) <= 0, (path, overflow(browser))
    no_csp_violations(browser)


def test_whatsapp_callback_url_and_verify_token_have_copy_buttons(service, browsers):  # noqa: F811
    browser = browsers(**PHONE)
    welcome(browser, person_link(service["environ"], "ana@example.com", "Ana"))
    browser.get(service["base"] + "/app/channels/new/whatsapp")
    fill(browser, "name", "WhatsApp")
    for name in ("phone_number_id", "business_account_id", "display_phone_number",
                 "access_token", "app_secret"):  # fmt: skip
        fill(browser, name, WA_SETTINGS[name])
    token = browser.find_element(By.ID, "verify_token").get_attribute("value")
    assert len(token) >= 16  # a suggested one, to paste into Meta's dashboard
    browser.find_element(By.XPATH, "//button[normalize-space()='Create the channel']").click()

    callback = settled(browser, lambda b: b.find_element(By.ID, "callback-url"))
    url = callback.get_attribute("value")
    assert url.startswith(service["base"] + "/inbound/whatsapp/")
    assert browser.find_element(By.ID, "verify-token-once").get_attribute("value") == token
    for source in ("callback-url", "verify-token-once"):
        copy = browser.find_element(By.CSS_SELECTOR, f"button.copy[data-copy='{source}']")
        copy.click()
        WebDriverWait(browser, 5).until(lambda b, button=copy: button.text == "Copied")
        copied = browser.execute_script(
            "const f = document.activeElement;"
            "return [f.id, f.value.substring(f.selectionStart, f.selectionEnd)]"
        )
        assert copied == [source, url if source == "callback-url" else token]
    assert overflow(browser) <= 0
    browser.get(url.replace("/inbound/whatsapp/", "/app/channels/"))
    assert token not in browser.page_source  # shown that once only
    no_csp_violations(browser)


def test_the_email_presets_fill_in_the_servers(service, browsers):  # noqa: F811
    browser = browsers(**PHONE)
    welcome(browser, person_link(service["environ"], "ana@example.com", "Ana"))
    browser.get(service["base"] + "/app/channels/new/email")
    fill(browser, "imap_port", "1143")
    Select(browser.find_element(By.ID, "email-preset")).select_by_visible_text("Fastmail")
    value = lambda name: browser.find_element(By.ID, name).get_attribute("value")  # noqa: E731
    filled = {name: value(name) for name in ("imap_host", "imap_security", "smtp_host",
                                             "smtp_security", "imap_port")}  # fmt: skip
    assert filled == {
        "imap_host": "imap.fastmail.com",
        "imap_security": "ssl",
        "smtp_host": "smtp.fastmail.com",
        "smtp_security": "ssl",
        "imap_port": "",  # the security's port
    }
    Select(browser.find_element(By.ID, "email-preset")).select_by_visible_text(
        "Gmail / Google Workspace"
    )
    assert (value("imap_host"), value("smtp_security")) == ("imap.gmail.com", "starttls")


def test_an_agent_role_person_gets_the_403_page_on_each(service, browsers):  # noqa: F811
    base, paths = service["base"], admin_pages(service)
    browser = browsers(**PHONE)
    link = person_link(service["environ"], "bo@example.com", "Bo", role="agent")
    welcome(browser, link)
    for words in ADMIN_LINKS:
        assert not browser.find_elements(By.LINK_TEXT, words), words
    for path in paths:
        browser.get(base + path)
        assert heading(browser) == "Not allowed", path
        assert "for the admins of your workspace" in browser.page_source, path
        assert overflow(browser) <= 0, path
