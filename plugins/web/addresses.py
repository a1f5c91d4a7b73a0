"""Which addresses and host names a fetched URL may reach: the public internet, nothing else.

Pure and table-driven, so every rule stands here and a property test can hold it. An address is
refused when it is not public unicast: this machine (loopback, unspecified), the local networks
(RFC 1918, unique local fc00::/7, CGNAT 100.64/10), link-local (169.254/16 and fe80::/10, where
clouds serve instance metadata and credentials at 169.254.169.254), multicast, documentation,
benchmarking and reserved ranges. IPv6 forms that carry an IPv4 address (mapped ``::ffff:a.b.c.d``,
NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) are judged by the IPv4 address they carry.

An operator may lift the check for named hosts (``allow_hosts``: an intranet wiki, the tests'
loopback server), but never for link-local, multicast or unspecified addresses, nor for the
cloud metadata names: no configuration makes the bot read instance credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

__all__ = ["IPAddress", "Refusal", "address_refusal", "name_refusal", "parse_address"]

IPAddress = IPv4Address | IPv6Address


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an address or a name is not fetched; ``always``: ``allow_hosts`` cannot lift it."""

    reason: str
    always: bool = False


_LOOPBACK = Refusal("a loopback address (this machine)")
_PRIVATE = Refusal("a private network address")
_LINK_LOCAL = Refusal("a link-local address (cloud metadata lives there)", always=True)
_UNSPECIFIED = Refusal("the unspecified address (this machine)", always=True)
_MULTICAST = Refusal("a multicast address", always=True)
_RESERVED = Refusal("a reserved or special-purpose address")

_IPV4: tuple[tuple[IPv4Network, Refusal], ...] = tuple(
    (IPv4Network(net), why)
    for net, why in (
        ("0.0.0.0/8", _UNSPECIFIED),
        ("10.0.0.0/8", _PRIVATE),
        ("100.64.0.0/10", Refusal("a carrier-grade NAT address (a provider's private network)")),
        ("127.0.0.0/8", _LOOPBACK),
        ("169.254.0.0/16", _LINK_LOCAL),
        ("172.16.0.0/12", _PRIVATE),
        ("192.0.0.0/24", _RESERVED),  # IETF protocol assignments
        ("192.0.2.0/24", _RESERVED),  # documentation (TEST-NET-1)
        ("192.88.99.0/24", _RESERVED),  # the old 6to4 relay anycast
        ("192.168.0.0/16", _PRIVATE),
        ("198.18.0.0/15", _RESERVED),  # benchmarking
        ("198.51.100.0/24", _RESERVED),  # documentation (TEST-NET-2)
        ("203.0.113.0/24", _RESERVED),  # documentation (TEST-NET-3)
        ("224.0.0.0/4", _MULTICAST),
        ("240.0.0.0/4", _RESERVED),  # future use, and the broadcast 255.255.255.255
    )
)

# Only global unicast (2000::/3) is fetched; inside it, these are refused or judged by the IPv4
# address they carry. Everything outside 2000::/3 gets a reason from _IPV6_OUTSIDE.
_GLOBAL_UNICAST = IPv6Network("2000::/3")
_IPV6_INSIDE: tuple[tuple[IPv6Network, Refusal], ...] = tuple(
    (IPv6Network(net), why)
    for net, why in (
        ("2001::/23", _RESERVED),  # IETF protocol assignments, Teredo among them
        ("2001:db8::/32", _RESERVED),  # documentation
        ("3fff::/20", _RESERVED),  # documentation (RFC 9637)
    )
)
_IPV6_OUTSIDE: tuple[tuple[IPv6Network, Refusal], ...] = tuple(
    (IPv6Network(net), why)
    for net, why in (
        ("::/128", _UNSPECIFIED),
        ("::1/128", _LOOPBACK),
        ("fc00::/7", Refusal("a unique local address (a private network)")),
        ("fe80::/10", _LINK_LOCAL),
        ("ff00::/8", _MULTICAST),
    )
)
_MAPPED = IPv6Network("::ffff:0:0/96")
_NAT64 = IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR = IPv6Network("2002::/16")

# Names that reach the bot's own machine or network whatever DNS answers for them.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".home.arpa", ".lan", ".intranet")
_METADATA_NAMES = frozenset(
    {"metadata.google.internal", "metadata.goog", "metadata", "instance-data"}
)


def address_refusal(address: IPAddress) -> Refusal | None:
    """Why ``address`` is not a public unicast address, or None when it is."""
    if isinstance(address, IPv4Address):
        return next((why for net, why in _IPV4 if address in net), None)
    if address in _MAPPED or address in _NAT64:
        return address_refusal(IPv4Address(int(address) & 0xFFFFFFFF))
    if address in _SIX_TO_FOUR:
        return address_refusal(IPv4Address((int(address) >> 80) & 0xFFFFFFFF))
    if address in _GLOBAL_UNICAST:
        return next((why for net, why in _IPV6_INSIDE if address in net), None)
    return next((why for net, why in _IPV6_OUTSIDE if address in net), _RESERVED)


def name_refusal(host: str) -> Refusal | None:
    """Why a host name is not fetched before any lookup, or None.

    ``host`` is lower case, IDNA-encoded, without a trailing dot. A name without a dot is
    completed by the machine's search domains (an intranet name); ``localhost`` and the local
    and internal suffixes name this machine or its network; the metadata names are refused
    always.
    """
    if host in _METADATA_NAMES or host.endswith(".metadata.google.internal"):
        return Refusal("a cloud metadata service", always=True)
    if host == "localhost" or host.endswith(_LOCAL_SUFFIXES):
        return Refusal("a name for this machine or its local network")
    if "." not in host:
        return Refusal("a name without a domain (a local network name)")
    return None


def parse_address(host: str) -> IPAddress | None:
    """``host`` as an IP address when it is written as one (IPv6 without brackets), else None."""
    try:
        return ip_address(host)
    except ValueError:
        return None
