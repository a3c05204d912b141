"""What the website widget serves (its script and hosted page) and the
settings that shape it, through HTTP."""

import gzip

import pytest

from conftest import assert_error
from conversations_helpers import data, make_channel

SITE = "https://shop.example.com"
BASE = "http://127.0.0.1:8080"


@pytest.fixture
def site(caller):
    settings = {"allowed_origins": [SITE, "https://www.shop.example.com"], "title": "Loja"}
    return make_channel(caller, "Site", "website", settings)


def served(client, url):
    return client.get(url.removeprefix(BASE))


def test_the_script_is_small_plain_javascript(client, caller, site):
    widget = data(caller.get(f"/v1/channels/{site['id']}/widget"))
    script = served(client, widget["script_url"])
    assert script.status_code == 200
    assert script.mimetype == "text/javascript"
    assert script.headers["X-Content-Type-Options"] == "nosniff"
    assert len(gzip.compress(script.data)) < 30 * 1024
    text = script.get_data(as_text=True)
    # Typed text only ever reaches the page as text.
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in text
    assert "textContent" in text


def test_the_hosted_page_may_be_framed_by_the_allowed_origins_only(client, caller, site):
    widget = data(caller.get(f"/v1/channels/{site['id']}/widget"))
    page = served(client, widget["page_url"])
    assert page.status_code == 200 and page.mimetype == "text/html"
    policy = page.headers["Content-Security-Policy"]
    assert f"frame-ancestors 'self' {SITE} https://www.shop.example.com;" in policy
    html = page.get_data(as_text=True)
    assert f'src="/widget/{site["id"]}/widget.js" data-page="1"' in html
    assert "<title>Loja</title>" in html


def test_the_title_is_escaped_in_the_hosted_page(client, caller):
    channel = make_channel(caller, "S", "website", {"title": "<script>alert(1)</script>"})
    html = client.get(f"/widget/{channel['id']}").get_data(as_text=True)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_no_allowed_origin_means_only_the_service_itself_frames_it(client, caller):
    channel = make_channel(caller, "Bare", "website")
    page = client.get(f"/widget/{channel['id']}")
    assert "frame-ancestors 'self';" in page.headers["Content-Security-Policy"]


def test_a_deleted_channel_serves_nothing(client, caller, site):
    assert caller.delete(f"/v1/channels/{site['id']}").status_code == 204
    for path in ("", "/widget.js"):
        assert_error(client.get(f"/widget/{site['id']}{path}"), 404, "CHANNEL_NOT_FOUND")


def test_the_widget_settings_reach_the_visitor(client, caller, site):
    settings = {
        "greeting": "Olá!",
        "primary_color": "#AA3300",
        "position": "bottom-left",
        "launcher_text": "Fale connosco",
        "require_name": True,
        "identity_secret": "a-long-enough-secret",
    }
    data(caller.patch(f"/v1/channels/{site['id']}", json={"settings": settings}))
    session = client.post(
        f"/widget/{site['id']}/api/session", json={}, headers={"Origin": SITE}
    ).get_json()["data"]
    assert session["config"] == {
        "title": "Loja",
        "greeting": "Olá!",
        "primary_color": "#aa3300",
        "background_color": None,
        "text_color": None,
        "launcher_text": "Fale connosco",
        "position": "bottom-left",
        "require_name": True,
        "require_email": False,
    }
    widget = data(caller.get(f"/v1/channels/{site['id']}/widget"))["config"]
    assert widget["identity_verification"] is True
    shown = data(caller.get(f"/v1/channels/{site['id']}/settings"))
    assert shown["identity_secret_set"] is True and "identity_secret" not in shown


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("position", "top-left"),
        ("launcher_text", "x" * 41),
        ("require_name", "yes"),
        ("require_email", 1),
        ("identity_secret", "short"),
        ("primary_color", "red"),
        ("allowed_origins", ["https://shop.example.com/path"]),
    ],
)
def test_bad_widget_settings_are_named(caller, site, setting, value):
    response = caller.patch(f"/v1/channels/{site['id']}", json={"settings": {setting: value}})
    assert_error(response, 400, "VALIDATION_ERROR", f"settings.{setting}")
