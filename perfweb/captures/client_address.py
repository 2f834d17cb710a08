"""The address a request came from, for rate limits and a share link's uses.

X-Forwarded-For is whatever the client wrote unless a proxy we trust wrote it, so it is
read only when the request comes from one of PERFWEB_TRUSTED_PROXIES (addresses or
networks): then the address is the last one in the header that is not itself a trusted
proxy (each proxy appends the address it received the request from). Otherwise, and by
default, it is REMOTE_ADDR.
"""
from __future__ import annotations

import ipaddress
from functools import lru_cache

from django.conf import settings


@lru_cache(maxsize=8)
def _networks(proxies: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in proxies if p.strip())


def _ip(text: str):
    try:
        return ipaddress.ip_address(text.strip().strip("[]"))
    except ValueError:
        return None


def client_address(request) -> str:
    """The client's address as text (normalized), or REMOTE_ADDR as it is when that is
    no address (a Unix socket)."""
    remote = request.META.get("REMOTE_ADDR", "")
    trusted = _networks(tuple(getattr(settings, "PERFWEB_TRUSTED_PROXIES", ())))
    ip = _ip(remote)
    if ip is None:
        return remote[:64]

    def is_proxy(addr) -> bool:
        return any(addr in net for net in trusted if addr.version == net.version)
    if trusted and is_proxy(ip):
        for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
            addr = _ip(hop)
            if addr is None:
                break  # a hop that is no address: none before it can be believed
            ip = addr
            if not is_proxy(addr):
                break
    return str(ip.ipv4_mapped or ip) if ip.version == 6 else str(ip)


def limit_key(address: str) -> str:
    """What one client is counted as: its address, or its /64 for IPv6 (one host is
    given a whole /64, and chooses any address in it)."""
    ip = _ip(address)
    if ip is None or ip.version == 4:
        return address
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))
