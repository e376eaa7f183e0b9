"""The README's bridge and streaming examples run: the ```sh kafka blocks of the README and of
the docs/ pages it leads to (`DOCUMENTS`), pasted into bash from the repository root in that
order, against a real broker (deploy/kafka/kafka.sh) and a fresh `flatavro serve`, print what
the page shows (whitespace aside). The blocks start the real
`python -m spark_jobs.stream` (Spark, spark-sql-kafka, Delta) and read the table with delta-rs.
``FLATAVRO_UPDATE_README=1`` rewrites the shown outputs from a run instead (review the diff)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest

from tests.readme_blocks import (
    BROKER_ADDRESS,
    RUN_WITH_KAFKA,
    SERVICE_ADDRESS,
    document_examples,
    rewrite_output,
    same_output,
)
from tests.support.parts import Broker
from tests.test_readme import ROOT, UPDATE, service  # noqa: F401  (fixture)

EXAMPLES = document_examples(ROOT, RUN_WITH_KAFKA)


@pytest.fixture(scope="module")
def readme_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A broker of the README's own, as a new user's: the session's holds other tests' topics,
    which the examples' ``--topic-pattern 'tidb_.*'`` would pick up."""
    broker = Broker(tmp_path_factory.mktemp("readme-kafka"))
    yield broker
    broker.stop()


def test_readme_streams_a_topic_into_delta_through_a_schema_change() -> None:
    """The README streams a topic into Delta; its continuation in docs/ adds a column."""
    in_readme = [e.script for e in EXAMPLES if e.path == "README.md"]
    assert any("spark_jobs.stream" in s for s in in_readme)
    assert any("flatavro bridge" in s for s in in_readme)
    scripts = [e.script for e in EXAMPLES]
    assert sum("spark_jobs.stream" in s for s in scripts) >= 2
    assert any("/v1/tables/register" in s and "DEFAULT" in s for s in scripts)
    assert any("deltalake" in s for s in scripts)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[e.where for e in EXAMPLES])
def test_example_prints_what_the_readme_shows(index: int, service: str,  # noqa: F811
                                              readme_kafka: Broker) -> None:
    kafka = readme_kafka
    example = EXAMPLES[index]
    script = SERVICE_ADDRESS.sub(service, example.script).replace(BROKER_ADDRESS,
                                                                  kafka.bootstrap)
    # As a user's shell: no FLATAVRO_ settings, except where the JVM jars are cached.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FLATAVRO_") or k == "FLATAVRO_JVM_CACHE"}
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    actual = done.stdout.replace(service, "localhost:8080").replace(kafka.bootstrap,
                                                                    BROKER_ADDRESS)
    if UPDATE and example.expected is not None:
        rewrite_output(ROOT / example.path, RUN_WITH_KAFKA, example.index, actual)
        return
    assert same_output(actual, example.expected), (
        f"{example.where} printed:\n{actual}\nthe page shows:\n{example.expected}")
