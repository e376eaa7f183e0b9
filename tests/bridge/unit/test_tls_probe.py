"""`tls_hint` without a broker: a client that has TLS is never probed; a port that does not
complete a TLS handshake (a plain listener, nothing listening) gives no hint; a TLS listener
does (the secured-broker tests see it on a real one)."""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service.kafka_client.tls_probe import tls_hint
from tests.support.harness import free_port


@contextmanager
def listener(context: ssl.SSLContext | None) -> Iterator[str]:
    """A loopback listener that accepts one connection (TLS with `context`), then closes."""
    server = socket.create_server(("127.0.0.1", 0))
    address = f"127.0.0.1:{server.getsockname()[1]}"

    def accept() -> None:
        connection, _ = server.accept()
        try:
            if context is not None:
                context.wrap_socket(connection, server_side=True).close()
        except (OSError, ssl.SSLError):
            pass
        finally:
            connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield address
    finally:
        thread.join(5)
        server.close()


def test_a_client_with_tls_is_not_probed() -> None:
    for protocol in ("SSL", "sasl_ssl"):
        assert tls_hint("127.0.0.1:1", {"security.protocol": protocol}) == ""


def test_no_hint_without_a_tls_answer() -> None:
    assert tls_hint(f"127.0.0.1:{free_port()}", {}) == ""
    with listener(None) as address:
        assert tls_hint(address, {"security.protocol": "SASL_PLAINTEXT"}) == ""


def test_a_tls_listener_is_named(tmp_path: Path) -> None:
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-keyout", str(tmp_path / "k.pem"), "-out",
                    str(tmp_path / "c.pem")], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "c.pem", tmp_path / "k.pem")
    with listener(context) as address:
        assert tls_hint(f"PLAINTEXT://{address}", {}) == (
            f": PLAINTEXT://{address} speaks TLS but security.protocol is PLAINTEXT (use SSL "
            f"or SASL_SSL)")
