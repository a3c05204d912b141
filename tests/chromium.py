"""Debian's headless Chromium, driven by Selenium (packages chromium and
chromium-driver, which .ci/run installs), for every browser test."""

import os
import tempfile

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
# Chromium leaves a directory of its singleton socket in TMPDIR at every
# start; this one is removed when the test process ends.
_TEMPORARY = tempfile.TemporaryDirectory(prefix="agent-platform-chromium-")


def chromium(width=1280, height=800):
    """A new browser of a window `width` by `height`, its console logged."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.fail("needs Debian's chromium and chromium-driver (.ci/run installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     f"--window-size={width},{height}"):  # fmt: skip
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the page's console
    service = Service(CHROMEDRIVER, env={**os.environ, "TMPDIR": _TEMPORARY.name})
    return webdriver.Chrome(service=service, options=options)
