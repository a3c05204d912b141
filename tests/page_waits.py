"""Waiting on a page in Chromium that a form's answer or the live script
may be replacing while a test reads it."""

from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    WebDriverException,
)
from selenium.webdriver.support.ui import WebDriverWait

PAGE_CHANGING = (NoSuchElementException, StaleElementReferenceException)
# What chromedriver says, as a bare WebDriverException, of a node read while
# its document is being replaced.
NODE_GONE = "does not belong to the document"


def settled(browser, found, seconds=10):
    """found(browser) once truthy, read afresh while the page is replaced."""
    waiting = WebDriverWait(browser, seconds, ignored_exceptions=PAGE_CHANGING)
    return waiting.until(lambda b: _unless_replaced(found, b))


def _unless_replaced(found, browser):
    try:
        return found(browser)
    except WebDriverException as error:
        if NODE_GONE not in (error.msg or ""):
            raise
        return False
