"""X-Hub-Signature-256 as Meta computes it, checked against the raw body."""

import hashlib
import hmac

import pytest

from agent_platform.channels.whatsapp.signature import expected_signature, signature_matches

BODY = b'{"object":"whatsapp_business_account","entry":[]}'
SECRET = "app-secret-1"
HEX = hmac.new(SECRET.encode(), BODY, hashlib.sha256).hexdigest()


def test_the_expected_header_is_the_hmac_of_the_body_with_the_app_secret():
    assert expected_signature(BODY, SECRET) == f"sha256={HEX}"


@pytest.mark.parametrize("header", [f"sha256={HEX}", f"sha256={HEX.upper()}", f"sha256= {HEX} "])
def test_the_header_matches_in_any_case_and_spacing(header):
    assert signature_matches(BODY, header, SECRET)


@pytest.mark.parametrize(
    "body, header, secret",
    [
        (BODY + b" ", f"sha256={HEX}", SECRET),  # the body re-serialised
        (BODY, f"sha256={HEX}", "another-secret"),
        (BODY, f"sha1={HEX}", SECRET),
        (BODY, f"sha384={HEX}", SECRET),  # another prefix as long as sha256=
        (BODY, HEX, SECRET),
        (BODY, f"sha256={HEX[:-1]}", SECRET),
        (BODY, f"sha256={HEX}é", SECRET),
        (BODY, "", SECRET),
        (BODY, None, SECRET),
        (BODY, f"sha256={HEX}", ""),
        (BODY, f"sha256={HEX}", None),
    ],
)
def test_anything_else_does_not_match(body, header, secret):
    assert not signature_matches(body, header, secret)
