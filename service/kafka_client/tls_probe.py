"""`tls_hint`: whether a broker that does not answer a client without TLS speaks TLS on its
port. A TLS listener reached with ``security.protocol`` PLAINTEXT or SASL_PLAINTEXT closes the
connection without a word, and librdkafka then says only that the broker is down; one TLS
handshake (nothing verified: the question is only whether TLS answers) names the cause."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Mapping

__all__ = ["tls_hint"]

_WITHOUT_TLS = {"PLAINTEXT": "SSL or SASL_SSL", "SASL_PLAINTEXT": "SASL_SSL"}


def tls_hint(bootstrap_servers: str, settings: Mapping[str, str], *,
             timeout: float = 2.0) -> str:
    """``": <address> speaks TLS ..."`` when the client's settings have no TLS and a
    bootstrap address completes a TLS handshake; else empty."""
    protocol = settings.get("security.protocol", "plaintext").upper()
    if protocol not in _WITHOUT_TLS:
        return ""
    for address in bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition("://")[2].rpartition(":")
        if port.isdigit() and _speaks_tls(host.strip("[]"), int(port), timeout=timeout):
            return (f": {address.strip()} speaks TLS but security.protocol is {protocol} "
                    f"(use {_WITHOUT_TLS[protocol]})")
    return ""


def _speaks_tls(host: str, port: int, *, timeout: float) -> bool:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw, \
                context.wrap_socket(raw, server_hostname=host or None):
            return True
    except (OSError, ValueError):  # ssl.SSLError is an OSError
        return False
