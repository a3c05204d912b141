"""What a limit counts a client's address as: one subscriber, not one address.

An ISP hands each subscriber a whole /64 of IPv6 addresses or more (RFC
6177), any of which its hosts may take: counted one by one, a single client
could use a new address for each request and never meet a limit (the rate
limits on sign-in, on the widget's new visitors, on invalid keys, and the
cap on open connections). So an IPv6 address counts as its /64, an
IPv4-mapped one as the IPv4 address it maps, an IPv4 address as itself.
A port some proxies write after it is no part of it."""

import ipaddress
import re

_SUBSCRIBER_PREFIX = 64
# "192.0.2.7:5555", "[2001:db8::1]:443", "[2001:db8::1]": the address alone.
_WITH_PORT = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\](?::[0-9]{1,5})?|(?P<v4>[0-9]{1,3}(?:\.[0-9]{1,3}){3}):[0-9]{1,5})"
)


def limited_as(address):
    """The key `address` (text, as the connection or a proxy gave it) is
    counted under; text that is no address is its own key."""
    if ":" not in address:  # IPv4 (or no address): as it is, without parsing it
        return address
    address = _without_port(address)
    if ":" not in address:
        return address
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:
        return address
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    host_bits = 128 - _SUBSCRIBER_PREFIX
    return str(ipaddress.IPv6Network((int(ip) >> host_bits << host_bits, _SUBSCRIBER_PREFIX)))


def _without_port(address):
    found = _WITH_PORT.fullmatch(address)
    return address if found is None else found["v6"] or found["v4"]
