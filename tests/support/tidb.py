"""A TiDB server (deploy/tidb/tidb.sh: tidb-server with its embedded unistore) on loopback as
the upstream TiDB the handle-key-only tests read rows from at a commit ts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.support.harness import free_port
from tests.support.parts import ROOT, not_in_fast_tier

TIDB_SH = ROOT / "deploy" / "tidb" / "tidb.sh"


class UpstreamTiDB:
    """A running tidb-server: MySQL protocol on 127.0.0.1:`port`, user root, no password."""

    def __init__(self, data: Path) -> None:
        """Start tidb-server with its data in `data` (built by make setup/test; by the script
        when missing, which takes minutes)."""
        not_in_fast_tier("a TiDB server", "spark")
        self.data, self.port = data, free_port()
        done = subprocess.run([str(TIDB_SH), "start", str(data), str(self.port)],
                              capture_output=True, text=True, timeout=1200, check=False)
        assert done.returncode == 0, f"tidb-server did not start:\n{done.stderr[-3000:]}"
        self.dsn = f"root@tcp(127.0.0.1:{self.port})/"

    def connect(self) -> Any:
        """A PyMySQL connection as root (autocommit)."""
        import pymysql

        return pymysql.connect(host="127.0.0.1", port=self.port, user="root",
                               autocommit=True, charset="utf8mb4")

    def committed(self, statement: str, *parameters: Any) -> int:
        """Run `statement` (its own transaction); its commit ts."""
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, parameters or None)
                cursor.execute("select @@tidb_last_txn_info")
                commit_ts: int = json.loads(cursor.fetchone()[0])["commit_ts"]
                return commit_ts
        finally:
            connection.close()

    def run(self, *statements: str) -> None:
        """Run `statements`, each in its own transaction."""
        connection = self.connect()
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            connection.close()

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL); its data is the test's to discard."""
        subprocess.run([str(TIDB_SH), "stop", str(self.data)], capture_output=True,
                       timeout=60, check=False)
