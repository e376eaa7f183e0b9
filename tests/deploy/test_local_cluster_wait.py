"""The standalone cluster's start-up wait (deploy/spark/local_cluster.py) against a stand-in
for the master's web UI: Jetty listens a moment before the master attaches ``/json/`` and
answers 404 meanwhile (a CI run's cluster fixture failed on that); any other status is a
failure at once, and a master that never gets there fails within the wait's bound."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from deploy.spark.local_cluster import SparkCluster


class _MasterUI(ThreadingHTTPServer):
    """Answers `statuses` in turn (404 and 500 with Jetty's HTML page), then the JSON."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses, self.requests = statuses, 0
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    server: _MasterUI

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        assert self.path == "/json/"
        ui = self.server
        status = ui.statuses[ui.requests] if ui.requests < len(ui.statuses) else 200
        ui.requests += 1
        body = (b'{"status": "ALIVE", "workers": []}' if status == 200
                else b"<html><title>Error 404 Not Found</title></html>")
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def master_ui(request: pytest.FixtureRequest) -> Iterator[_MasterUI]:
    ui = _MasterUI(list(request.param))
    thread = threading.Thread(target=ui.serve_forever, daemon=True)
    thread.start()
    yield ui
    ui.shutdown()
    ui.server_close()


@pytest.fixture
def cluster(master_ui: _MasterUI, tmp_path: Path) -> Iterator[SparkCluster]:
    """A SparkCluster whose master is a sleeping process and whose web UI is `master_ui`."""
    cluster = SparkCluster.__new__(SparkCluster)
    cluster.base = tmp_path
    (tmp_path / "master.log").write_text("the master's log\n")
    cluster.web_url = f"http://127.0.0.1:{master_ui.server_address[1]}"
    cluster.master = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    cluster.workers = []
    yield cluster
    cluster.master.kill()
    cluster.master.wait()


def _alive(state: dict[str, object]) -> bool:
    return state.get("status") == "ALIVE"


@pytest.mark.parametrize("master_ui", [[404, 404, 404]], indirect=True)
def test_a_404_while_the_master_starts_is_waited_out(master_ui: _MasterUI,
                                                     cluster: SparkCluster) -> None:
    cluster._wait(_alive, "the master", timeout=30)
    assert master_ui.requests == 4


@pytest.mark.parametrize("master_ui", [[500]], indirect=True)
def test_another_status_fails_at_once(master_ui: _MasterUI, cluster: SparkCluster) -> None:
    with pytest.raises(httpx.HTTPStatusError, match="500"):
        cluster._wait(_alive, "the master", timeout=30)
    assert master_ui.requests == 1


@pytest.mark.parametrize("master_ui", [[404] * 1000], indirect=True)
def test_a_master_that_never_attaches_its_pages_fails_in_time(cluster: SparkCluster) -> None:
    with pytest.raises(AssertionError, match=r"the master of the Spark cluster did not come "
                                             r"up within 1 s:\nthe master's log"):
        cluster._wait(_alive, "the master", timeout=1)
