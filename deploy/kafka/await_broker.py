"""Wait until a starting Kafka broker answers: ``python await_broker.py PORT PID NODES SECONDS
WHAT`` exits 0 once a metadata request to 127.0.0.1:PORT lists at least NODES brokers, and
exits with a message naming WHAT when process PID ends first or SECONDS pass (kafka.sh and
cluster.sh then print the log's tail)."""

from __future__ import annotations

import os
import sys
import time

from confluent_kafka.admin import AdminClient


def main(port: str, pid: int, nodes: int, seconds: float, what: str) -> str | int:
    """0 when ready, else the reason."""
    admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{port}", "log_level": 0})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return f"{what} exited during start-up"
        try:
            if len(admin.list_topics(timeout=2).brokers) >= nodes:
                return 0
        except Exception:  # not answering yet: asked again until the deadline
            pass
        time.sleep(0.5)
    return f"{what} did not answer (listing {nodes} broker(s)) within {seconds:g} s"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]),
                  sys.argv[5]))
