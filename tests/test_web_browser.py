"""The inbox's sign-in in real Chromium against `agent-platform serve`, as a
person meets it: the first user made with the CLI opens their one-time
link, chooses a password, lands signed in, signs out, and signs in again.
The page's console must stay free of Content-Security-Policy violations."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from chromium import chromium
from page_waits import settled
from test_cli import free_port
from test_cli import serving as serve

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "correct horse battery"


@pytest.fixture
def service(tmp_path):
    port = free_port()
    environ = {**os.environ, "AGENT_PLATFORM_DATABASE_PATH": str(tmp_path / "inbox.db"),
               "AGENT_PLATFORM_SERVER_PUBLIC_URL": f"http://127.0.0.1:{port}"}  # fmt: skip
    with serve(["--port", str(port)], environ, port) as (base, _):
        yield base, environ


@pytest.fixture
def browser():
    driver = chromium(390, 800)  # a phone's width: the pages must work there
    try:
        yield driver
    finally:
        driver.quit()


def first_user_link(environ):
    """`agent-platform users create` as the serve output tells: its link."""
    output = subprocess.run(
        [sys.executable, "-m", "agent_platform", "users", "create", "--workspace",
         "Default workspace", "--email", "ana@example.com", "--name", "Ana <b>", "--role", "admin"],
        cwd=ROOT, env={**environ, "PYTHONPATH": str(ROOT / "platform")},
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return output.strip().splitlines()[-1]


def fill(browser, label, value):
    """Type into the field a <label> names, as a screen reader finds it."""
    field_id = browser.find_element(By.XPATH, f"//label[normalize-space()='{label}']")
    browser.find_element(By.ID, field_id.get_attribute("for")).send_keys(value)


def press(browser, text):
    browser.find_element(By.XPATH, f"//button[normalize-space()='{text}']").click()


def heading(browser):
    return settled(browser, lambda b: b.find_element(By.TAG_NAME, "h1").text)


def test_one_time_link_password_sign_out_and_sign_in_again(service, browser):
    base, environ = service
    link = first_user_link(environ)
    assert link.startswith(base + "/app/welcome/")
    browser.get(link)
    assert heading(browser) == "Welcome, Ana <b>"  # the name as text
    fill(browser, "New password", PASSWORD)
    fill(browser, "The same password again", PASSWORD)
    press(browser, "Save and sign in")
    WebDriverWait(browser, 10).until(lambda b: b.current_url == base + "/app")
    assert heading(browser) == "Inbox"
    assert browser.find_element(By.CLASS_NAME, "user-name").text == "Ana <b>"
    assert browser.find_element(By.CLASS_NAME, "brand").text == "Default workspace"
    # The stylesheet loaded under the CSP (a blocked one leaves the body unstyled).
    assert browser.find_element(By.TAG_NAME, "body").value_of_css_property("margin") == "0px"

    press(browser, "Sign out")
    WebDriverWait(browser, 10).until(lambda b: b.current_url == base + "/app/sign-in")
    browser.get(link)  # spent
    assert heading(browser) == "Not found"

    browser.get(base + "/app")
    assert heading(browser) == "Sign in"
    fill(browser, "E-mail", "ana@example.com")
    fill(browser, "Password", "not the password")
    press(browser, "Sign in")
    error = WebDriverWait(browser, 10).until(lambda b: b.find_element(By.CLASS_NAME, "error"))
    assert error.text == "The e-mail or the password is wrong."
    fill(browser, "Password", PASSWORD)
    press(browser, "Sign in")
    WebDriverWait(browser, 10).until(lambda b: b.current_url == base + "/app")
    assert heading(browser) == "Inbox"
    violations = [
        e for e in browser.get_log("browser") if "Content Security Policy" in e["message"]
    ]
    assert violations == []
