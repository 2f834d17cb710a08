"""A webhook's transport: which addresses a webhook may go to, and the HTTP(S) POST to
one of them. Pure (no Django, no database): services/webhooks.py decides when to POST
and what; this module only says whether, and does it within a deadline.

Server-side request forgery: only http(s) URLs without credentials are kept; at delivery
the host name is resolved, and unless the caller allows private addresses
(PERFWEB_WEBHOOK_ALLOW_PRIVATE) every address must be a public one (is_public: no
loopback, private, link-local such as the cloud metadata address 169.254.169.254,
shared, reserved or multicast range, and for IPv6 only global unicast 2000::/3, with
the IPv4 address that 6to4 and NAT64 addresses carry checked as IPv4); the connection
goes to the address that was checked (no second lookup to rebind), redirects are not
followed, and answers are read to 64 KiB at most. The whole exchange, name lookup
included, ends within three timeouts.

A URL is kept in ASCII (an HTTP request line and Host header carry nothing else): an IRI
(RFC 3987) is turned into its URI (RFC 3986) when saved, the host name IDNA-encoded
(UTS #46, punycode) and the path, query and fragment percent-encoded as UTF-8, as
Django's iri_to_uri does; what cannot be encoded is refused with a sentence. A URL
with `é` in its path was saved as typed, and every delivery then failed inside
http.client with a UnicodeEncodeError that left its notification leased and unlogged.
"""
from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import time
import urllib.parse

import idna


class InvalidWebhook(ValueError):
    """A URL we do not POST to; the message says why, for the page."""


class DeliveryError(Exception):
    """An attempt that reached no answer (connection, DNS, timeout): tried again."""


class Refused(DeliveryError):
    """An attempt we would not make (the address is not public): not tried again."""


# ---- the address policy -------------------------------------------------------------------
_GLOBAL_UNICAST = ipaddress.ip_network("2000::/3")
#: RFC 6052's well-known NAT64 prefix: the IPv4 address is the last 32 bits
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_TEREDO = ipaddress.ip_network("2001::/32")


def is_public(address: str) -> bool:
    """Whether a webhook may go to `address` when private addresses are not allowed.

    IPv4: a global address (Python's IANA special-purpose tables), not multicast.
    IPv6: IPv4-mapped (::ffff:a.b.c.d) and NAT64 (64:ff9b::a.b.c.d) addresses are their
    IPv4 address, 6to4 (2002::/16) must carry a public one; everything else must be
    global unicast (2000::/3) and global: so ::a.b.c.d (IPv4-compatible),
    ::ffff:0:a.b.c.d (IPv4-translated), the local-use NAT64 prefix 64:ff9b:1::/48 (its
    translator's layout is the network's own), site-local fec0::/10, unique-local
    fc00::/7, link-local fe80::/10, multicast and Teredo (2001::/32, an IPv4 host behind
    a NAT) are refused."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
        elif ip not in _GLOBAL_UNICAST or ip in _TEREDO:
            return False
    return ip.is_global and not ip.is_multicast


#: what RFC 3986 allows as it is in a path, query or fragment, and `%` (an escape already
#: made): Django's iri_to_uri keeps the same characters
_URI_SAFE = "/#%[]=:;$&()+,!?*@'~"
MAX_URL = 2000


def _split(url: str) -> urllib.parse.SplitResult:
    try:
        return urllib.parse.urlsplit(url)
    except ValueError:  # `[` without `]`, or brackets round no IPv6 address
        raise InvalidWebhook("the URL's host in brackets is not an IPv6 address") from None


def _ascii_netloc(netloc: str) -> str:
    """The netloc with its host name IDNA-encoded (`bücher.example` ->
    `xn--bcher-kva.example`, UTS #46 mapping as browsers do), the rest percent-encoded."""
    userinfo, at, hostport = netloc.rpartition("@")
    if hostport.startswith("["):
        if not hostport.isascii():
            raise InvalidWebhook("the URL's IPv6 address holds characters that are not "
                                 "ASCII")
        host, port = hostport, ""
    else:
        host, colon, port = hostport.partition(":")
        port = colon + port
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError) as e:
            raise InvalidWebhook(f"the host name {host[:100]!r} cannot be written as an "
                                 f"international domain name ({e})") from None
    return urllib.parse.quote(userinfo + at, safe=_URI_SAFE) + host + \
        urllib.parse.quote(port, safe=_URI_SAFE)


def to_uri(url: str) -> str:
    """The URL in ASCII (RFC 3987 section 3.1: an IRI to its URI): the host name
    IDNA-encoded, the rest percent-encoded as UTF-8; InvalidWebhook for what cannot be."""
    if url.isascii():
        return url
    parts = _split(url)
    try:
        rest = [urllib.parse.quote(x, safe=_URI_SAFE)
                for x in (parts.path, parts.query, parts.fragment)]
        return urllib.parse.urlunsplit((parts.scheme, _ascii_netloc(parts.netloc), *rest))
    except UnicodeError:  # (a lone surrogate: no UTF-8 for it)
        raise InvalidWebhook("the URL holds characters that have no UTF-8 encoding") \
            from None


def check_url(url: str, allow_private: bool) -> str:
    """The URL to keep, in ASCII (to_uri), or InvalidWebhook. Host names are checked
    again, resolved, at each delivery (an address may change); literal addresses and
    localhost here, once encoded (`１２７.０.０.１` is 127.0.0.1 in IDNA)."""
    url = url.strip()
    if not url:
        raise InvalidWebhook("give the webhook's URL")
    if len(url) > MAX_URL or any(ord(c) < 33 or 127 <= ord(c) < 160 or c.isspace()
                                 for c in url):
        raise InvalidWebhook("the URL is longer than 2,000 characters or holds spaces or "
                             "control characters")
    scheme = _split(url).scheme
    if scheme.lower() not in ("http", "https"):
        raise InvalidWebhook(f"only http:// and https:// URLs are allowed, not "
                             f"{(scheme or url)[:20]!r}")
    url = to_uri(url)
    if len(url) > MAX_URL:
        raise InvalidWebhook(f"the URL is longer than 2,000 characters once encoded "
                             f"({len(url):,}: a character that is not ASCII takes up to "
                             f"12)")
    parts = _split(url)
    try:
        host, _ = parts.hostname, parts.port
    except ValueError:
        raise InvalidWebhook("the URL's port is not a number from 0 to 65535") from None
    if not host:
        raise InvalidWebhook("the URL has no host")
    if parts.username is not None or parts.password is not None:
        raise InvalidWebhook("the URL may not hold a user name or password (give a "
                             "secret for the signature instead)")
    if not allow_private:
        if host == "localhost" or host.endswith(".localhost"):
            raise InvalidWebhook(f"{host} is this machine: only public addresses are "
                                 f"allowed (PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
        try:
            literal = is_public(host)
        except ValueError:
            try:  # the forms the resolver reads as IPv4 too: 127.1, 0x7f000001, 2130706433
                literal = is_public(socket.inet_ntoa(socket.inet_aton(host)))
            except OSError:
                literal = None  # a name: resolved at delivery
        if literal is False:
            raise InvalidWebhook(f"{host} is not a public address: only public addresses "
                                 f"are allowed (PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
    return url


def shown_url(url: str) -> str:
    """What the page shows of a webhook URL: its scheme and host (a Slack webhook's path
    is its credential)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/…" if parts.path.strip("/") or parts.query \
        else f"{parts.scheme}://{parts.netloc}/"


# ---- the connection -----------------------------------------------------------------------
def _lookup(host: str, port: int, timeout: float) -> list:
    """socket.getaddrinfo within `timeout` seconds (it has no timeout of its own: the
    system resolver's retries can take 30 s); a lookup still running is left to finish
    in its daemon thread."""
    done, out = threading.Event(), {}

    def run():
        try:
            out["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            out["error"] = e
        done.set()
    threading.Thread(target=run, name="webhook-dns", daemon=True).start()
    if not done.wait(max(timeout, 0.0)):
        raise DeliveryError(f"cannot resolve {host} within {timeout:g} s")
    if "error" in out:
        e = out["error"]
        raise DeliveryError(f"cannot resolve {host}: {e.strerror or e}")
    return out["infos"]


def resolve(host: str, port: int, allow_private: bool, timeout: float = 5.0) -> list[str]:
    """The addresses to connect to: every address the name has must be public unless
    private ones are allowed (a name with one private address is refused)."""
    infos = _lookup(host, port, timeout)
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    if not allow_private:
        private = [a for a in addresses if not is_public(a)]
        if private:
            raise Refused(f"refused: {host} resolves to {private[0]}, not a public address "
                          f"(PERFWEB_WEBHOOK_ALLOW_PRIVATE)")
    return addresses


class _Deadline(Exception):
    """The exchange's deadline passed before a connection was made."""


def _connect(addresses: list[str], port: int, timeout: float,
             deadline: float) -> socket.socket:
    """A connection to the first address that answers, in the resolver's order (as
    socket.create_connection, without its second lookup); each gets `timeout`, all of
    them together no more than until `deadline` (time.monotonic())."""
    error = None
    for address in addresses:
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Deadline()
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET,
                             socket.SOCK_STREAM)
        try:
            sock.settimeout(min(timeout, left))
            sock.connect((address, port))
            sock.settimeout(timeout)  # (each read's)
            return sock
        except OSError as e:
            sock.close()
            error = e
    if deadline - time.monotonic() <= 0:
        raise _Deadline()
    raise error


class _Pinned(http.client.HTTPConnection):
    """HTTP to addresses already checked (no second lookup a DNS answer could change)."""

    def __init__(self, host, port, addresses, deadline, **kwargs):
        super().__init__(host, port, **kwargs)
        self._addresses, self._deadline = addresses, deadline

    def connect(self):
        self.sock = _connect(self._addresses, self.port, self.timeout, self._deadline)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to addresses already checked, with the host name for SNI and for the
    certificate's check."""

    def __init__(self, host, port, addresses, deadline, **kwargs):
        super().__init__(host, port, **kwargs)
        self._addresses, self._deadline = addresses, deadline

    def connect(self):
        sock = _connect(self._addresses, self.port, self.timeout, self._deadline)
        self.sock = sock  # (the deadline's timer shuts it during the handshake too)
        try:
            self.sock = self._context.wrap_socket(sock, server_hostname=self.host)
        except BaseException:
            sock.close()
            raise


def post(url: str, body: bytes, headers: dict, timeout: float, allow_private: bool) -> int:
    """POST `body`; the answer's status code (redirects are answers: not followed), or
    DeliveryError. `timeout` bounds the name lookup, each connect and each read; three
    of them bound the whole exchange, lookup and every address tried included."""
    total = 3 * timeout
    deadline = time.monotonic() + total
    late = DeliveryError(f"no whole answer within {total:g} s")
    try:  # again: a row written without the form is held to the same rules (and encoded)
        url = check_url(url, allow_private)
    except InvalidWebhook as e:
        raise Refused(f"refused: {e}") from None
    parts = urllib.parse.urlsplit(url)
    https = parts.scheme.lower() == "https"
    host, port = parts.hostname, parts.port or (443 if https else 80)
    addresses = resolve(host, port, allow_private, timeout)
    if https:
        conn = _PinnedHTTPS(host, port, addresses, deadline, timeout=timeout,
                            context=ssl.create_default_context())
    else:
        conn = _Pinned(host, port, addresses, deadline, timeout=timeout)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    # the timeout bounds each connect and read; this bounds the whole exchange (a
    # receiver sending a byte now and then): the socket is shut at the deadline
    cut = threading.Event()

    def shut():
        cut.set()
        with contextlib.suppress(OSError, AttributeError):
            conn.sock.shutdown(socket.SHUT_RDWR)
    timer = threading.Timer(max(deadline - time.monotonic(), 0.0), shut)
    timer.daemon = True
    timer.start()
    try:
        conn.request("POST", path, body=body, headers=headers)
        answer = conn.getresponse()
        with contextlib.suppress(OSError, http.client.HTTPException):
            answer.read(64 << 10)  # (its status is what counts; the rest may be cut)
        return answer.status
    except _Deadline:
        raise late from None
    except (OSError, http.client.HTTPException) as e:
        if cut.is_set() or time.monotonic() >= deadline:
            raise late from None
        if isinstance(e, socket.timeout):
            raise DeliveryError(f"no answer within {timeout:g} s") from None
        if isinstance(e, ssl.SSLError):
            why = getattr(e, "verify_message", None) or e.reason or str(e)
            raise DeliveryError(f"{host}:{port}: TLS: {why}") from None
        text = (getattr(e, "strerror", None) or str(e)).strip() or type(e).__name__
        raise DeliveryError(f"{host}:{port}: {text}") from None
    finally:
        timer.cancel()
        conn.close()
