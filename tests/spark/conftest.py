"""Real parts for the Spark tests: one local[2] session with the Maven-cache jars per test
session (the broker fixture `kafka` is in tests/conftest.py). A missing part fails loudly;
nothing is skipped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pyspark.sql import SparkSession

from spark_jobs.session import build_session
from tests.conftest import ROOT, Broker

__all__ = ["ROOT", "Broker"]


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    session = build_session("flatavro-tests", "local[2]")
    yield session
    session.stop()
