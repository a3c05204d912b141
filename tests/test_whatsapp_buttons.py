"""metadata.buttons as a WhatsApp interactive message: reply buttons when
they fit, a list otherwise, and what is refused (the send fails with the reason)."""

import pytest

from agent_platform.channels.senders import SendError
from agent_platform.channels.whatsapp.buttons import interactive


def test_three_short_buttons_are_reply_buttons():
    buttons = [{"text": "Delivery", "data": "choice:1"}, {"text": "None", "data": "choice:0"}]
    assert interactive("Do you mean:", {"buttons": buttons}) == {
        "type": "button",
        "body": {"text": "Do you mean:"},
        "action": {
            "buttons": [
                {"type": "reply", "reply": {"id": "choice:1", "title": "Delivery"}},
                {"type": "reply", "reply": {"id": "choice:0", "title": "None"}},
            ]
        },
    }


def test_long_texts_or_four_buttons_make_a_list_with_descriptions():
    long = "How much does delivery cost outside the city?"
    buttons = [{"text": long, "data": "choice:1"}, {"text": "None of these", "data": "choice:0"}]
    found = interactive("Do you mean:", {"buttons": buttons, "buttons_label": "Choose one please!"})
    assert found["type"] == "list"
    assert found["action"]["button"] == "Choose one please!"[:20]
    first, last = found["action"]["sections"][0]["rows"]
    assert first == {"id": "choice:1", "title": long[:23] + "…", "description": long}
    assert last == {"id": "choice:0", "title": "None of these"}
    four = [{"text": str(n), "data": f"c{n}"} for n in range(4)]
    assert interactive("?", {"buttons": four})["type"] == "list"


@pytest.mark.parametrize(
    "buttons, reason",
    [
        ([], "must list 1 to 10"),
        ([{"text": str(n), "data": str(n)} for n in range(11)], "must list 1 to 10"),
        ("choice", "must list 1 to 10"),
        ([{"data": "x"}], "buttons[0] needs a text"),
        ([{"text": "A", "url": "https://example.com"}], "buttons[0] needs data"),
        ([{"text": "  ", "data": "x"}], "buttons[0] needs a text"),
        ([{"text": "A", "data": "x" * 257}], "buttons[0] needs data"),
    ],
)
def test_what_whatsapp_cannot_show_is_refused(buttons, reason):
    with pytest.raises(SendError) as raised:
        interactive("?", {"buttons": buttons})
    assert raised.value.code == "INVALID_BUTTONS"
    assert reason in str(raised.value)
