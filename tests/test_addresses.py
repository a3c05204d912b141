"""What limits count a client's address as (addresses.limited_as)."""

import pytest

from agent_platform.addresses import limited_as


@pytest.mark.parametrize(
    ("address", "counted_as"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"),
        ("2001:DB8:1:3:0:0:0:1", "2001:db8:1:3::/64"),
        ("::1", "::/64"),
        ("::ffff:192.0.2.7", "192.0.2.7"),  # a dual-stack socket's IPv4 client
        ("", ""),
        # A proxy that writes the client's port too: still one client.
        ("192.0.2.7:5555", "192.0.2.7"),
        ("[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"),
        ("[2001:db8:1:2::1]", "2001:db8:1:2::/64"),
        ("[::ffff:192.0.2.7]:80", "192.0.2.7"),
        ("192.0.2.7:port", "192.0.2.7:port"),
        ("unix:/run/agent-platform.sock", "unix:/run/agent-platform.sock"),
        ("not an address", "not an address"),
    ],
)
def test_an_ipv6_address_counts_as_its_64_and_any_other_as_itself(address, counted_as):
    assert limited_as(address) == counted_as
