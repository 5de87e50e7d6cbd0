"""The rule for every listener that is not the Unix socket: a loopback IP address only.

TCP and the viewer trust a token, not the network, and a token sent in clear over a real
network would be read by anyone on it; so both refuse anything but ``127.0.0.0/8`` and
``::1``, and a host *name* too (``localhost`` may resolve elsewhere).
"""

from __future__ import annotations

import ipaddress

from ..errors import InvalidArgumentError


def parse_loopback(address: str, *, owner: str, field: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) on a loopback IP address; port 0: any free port.

    ``owner`` says whose address it is in the messages (``--tcp``, ``the viewer``) and
    ``field`` which setting to fix (:class:`InvalidArgumentError`'s ``field``).
    """
    host, sep, port = address.rpartition(":")
    if not sep:
        raise InvalidArgumentError(f"{owner} wants HOST:PORT, got {address!r}", field=field)
    host = host.strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise InvalidArgumentError(
            f"{owner}: the host must be a loopback IP address, got {host!r}", field=field
        ) from None
    if not ip.is_loopback:
        raise InvalidArgumentError(f"{owner} only listens on loopback addresses, not {host}", field=field)
    try:
        number = int(port)
    except ValueError:
        raise InvalidArgumentError(f"{owner}: the port must be a number, got {port!r}", field=field) from None
    if not 0 <= number <= 65535:
        raise InvalidArgumentError(f"{owner}: the port must be 0-65535, got {number}", field=field)
    return host, number


__all__ = ["parse_loopback"]
