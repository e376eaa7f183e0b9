"""The deploy files work as written: every path they name is in the repository (or built by
a documented make target), the images get what they run, the job accepts their arguments.

No Docker engine here, so the files are read, not run: the checks are what running them
would hit first (a COPY of a missing or docker-ignored path, a script not in the image, a
volume not declared, an argument the job refuses).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from service.api.app import create_app
from service.api.settings import Settings
from service.bridge.metrics import BridgeMetrics
from service.bridge.watchdog import Liveness
from service.cli.main import build_parser
from spark_jobs.session import CODEGEN_CACHE_ENTRIES, KAFKA_CONSUMER_CACHE
from spark_jobs.settings.config import parse_args, parse_stream_args
from tests.support.deploy import ROOT, make_env
from tests.support.harness import ServedApp, free_port

DEPLOY = ROOT / "deploy"
DOCKERFILES = {"flatavro": DEPLOY / "docker" / "Dockerfile",
               "spark": DEPLOY / "docker" / "spark.Dockerfile"}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    pairs = [line.split(None, 1) for line in lines if line and not line.startswith("#")]
    return [(pair[0].upper(), pair[1]) for pair in pairs]


def every(dockerfile: Path, instruction: str) -> list[str]:
    return [args for name, args in instructions(dockerfile) if name == instruction]


def only(dockerfile: Path, instruction: str) -> str:
    found = every(dockerfile, instruction)
    assert len(found) == 1, f"{dockerfile.name}: {instruction} {found}"
    return found[0]


def owned_volume(dockerfile: Path) -> str:
    """The image's one VOLUME, which its RUN creates and hands to its USER."""
    user, volume = only(dockerfile, "USER"), only(dockerfile, "VOLUME")
    assert [run for run in every(dockerfile, "RUN")
            if re.search(rf"mkdir (-p )?{volume} && chown {user}(:{user})? {volume}", run)]
    return volume


def copied(dockerfile: Path) -> list[str]:
    return [src for name, args in instructions(dockerfile) if name == "COPY"
            for src in args.split()[:-1]]


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("dockerfile", DOCKERFILES.values(), ids=DOCKERFILES.keys())
def test_copied_paths_exist_and_reach_the_build_context(dockerfile: Path) -> None:
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore").read_text(
        encoding="utf-8").split()
    assert ignore[ignore.index("*") + 1:]  # everything out, then the copied paths back in
    readme = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["readme"]
    assert {"pyproject.toml", readme, "service"} <= set(copied(dockerfile))
    for source in copied(dockerfile):
        assert (ROOT / source).exists(), source
        assert f"!{source}" in ignore, f"{source} is docker-ignored"


def test_service_image_installs_the_service_alone() -> None:
    dockerfile = DOCKERFILES["flatavro"]
    assert "spark_jobs" not in copied(dockerfile)
    install = only(dockerfile, "RUN")
    assert "pip install --no-cache-dir . " in install and "[" not in install
    # The compiled reader/writer is built (gcc present during the pip install, then removed)
    # and the build is checked, so the image never falls back to the slow path unnoticed.
    steps = [step.strip() for step in install.split("&&")]
    build = steps.index("pip install --no-cache-dir .")
    assert any("install" in s and " gcc" in s for s in steps[:build])
    assert 'python -c "import service.core._flatread"' in steps[build + 1:]
    assert any("purge" in s and " gcc" in s for s in steps[build + 1:])


def test_service_image_keeps_the_registry_in_a_volume_its_user_owns() -> None:
    dockerfile = DOCKERFILES["flatavro"]
    db_path = re.search(r"FLATAVRO_REGISTRY_DB_PATH=(\S+)", only(dockerfile, "ENV"))
    assert db_path
    data = str(PurePosixPath(db_path.group(1)).parent)
    assert owned_volume(dockerfile) == data
    mounts = compose()["services"]["flatavro"]["volumes"]
    assert [m for m in mounts if m.split(":")[1] == data]


# The image each built compose service runs (the bridge runs the service's image).
COMPOSE_IMAGES = {"flatavro": "flatavro", "bridge": "flatavro", "stream": "spark",
                  "spark": "spark"}


def test_compose_builds_from_the_repository() -> None:
    built = {name: service for name, service in compose()["services"].items()
             if "build" in service}
    assert set(built) == set(COMPOSE_IMAGES)
    for name, service in built.items():
        context = (DEPLOY / service["build"]["context"]).resolve()
        assert context == ROOT, name
        assert context / service["build"]["dockerfile"] == DOCKERFILES[COMPOSE_IMAGES[name]]


def test_compose_volumes_are_declared_and_bind_mounts_exist() -> None:
    spec = compose()
    for name, service in spec["services"].items():
        for mount in service.get("volumes", []):
            source = mount.split(":")[0]
            if source.startswith((".", "/")):
                assert (DEPLOY / source).exists(), f"{name}: {source}"
            else:
                assert source in spec["volumes"], f"{name}: {source}"


def test_compose_spark_runs_a_script_its_image_has_with_arguments_the_job_takes() -> None:
    dockerfile = DOCKERFILES["spark"]
    service = compose()["services"]["spark"]
    command = shlex.split(service["command"])
    assert command[0] == "spark-submit" and "--py-files" not in command
    script = next(i for i, token in enumerate(command) if token.endswith(".py"))
    inside = PurePosixPath(command[script]).relative_to(only(dockerfile, "WORKDIR"))
    assert inside.parts[0] in copied(dockerfile) and (ROOT / inside).is_file()
    config = parse_args(command[script + 1:])
    lake = owned_volume(dockerfile)
    assert PurePosixPath(config.output).is_relative_to(lake)
    assert [m for m in service["volumes"] if m.split(":")[1] == lake]
    install = "pip install --no-cache-dir '.[spark,aws]'"
    assert [run for run in every(dockerfile, "RUN") if install in run]


def test_submit_sh_names_repository_paths_and_documented_make_outputs() -> None:
    text = (DEPLOY / "spark" / "submit.sh").read_text(encoding="utf-8")
    named = set(re.findall(r"\$root/([\w./-]+)", text))
    assert {"spark_jobs/", "deploy/spark/build_zip.py", "dist/flatavro.zip"} <= named
    dist = subprocess.run(["make", "-n", "dist"], cwd=ROOT, capture_output=True, text=True,
                          check=True, env=make_env()).stdout
    for path in named:
        assert (ROOT / path).exists() or f"build_zip.py {path}" in dist, path
    assert '"$root/spark_jobs/$job.py"' in text
    usages = re.findall(r"#\s+deploy/spark/submit\.sh (.*?)\n(?!#\s{5})", text, re.S)
    assert len(usages) == 2
    for usage in usages:
        argv = shlex.split(usage.replace("\\\n#", ""))
        job = argv.pop(0) if argv[0] == "stream" else "bulk_read"
        assert (ROOT / "spark_jobs" / f"{job}.py").exists()
        (parse_stream_args if job == "stream" else parse_args)(argv)


def healthcheck_command(dockerfile: Path) -> list[str]:
    """The exec-form command of the image's HEALTHCHECK."""
    options, _, command = only(dockerfile, "HEALTHCHECK").partition(" CMD ")
    assert all(o.startswith("--") for o in options.split()), options
    argv = json.loads(command)
    assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
    return argv


def check_exit(argv: list[str], **environ: str) -> int:
    """Run a healthcheck's python command with this interpreter; its exit status."""
    assert argv[0] == "python"
    return subprocess.run([sys.executable, *argv[1:]], env=dict(os.environ, **environ),
                          capture_output=True, timeout=30, check=False).returncode


@pytest.mark.parametrize("path", ["spark/submit.sh", "helm/flatavro/templates/stream-job.yaml"])
def test_submitted_jobs_get_the_session_s_caches(path: str) -> None:
    """A job sent by spark-submit gets the same cache of compiled classes and of Kafka
    consumers as the sessions build_session makes itself (spark_jobs/session.py,
    CODEGEN_CACHE_ENTRIES, KAFKA_CONSUMER_CACHE)."""
    text = (DEPLOY / path).read_text(encoding="utf-8")
    assert re.findall(r"spark\.sql\.codegen\.cache\.maxEntries=(\d+)", text) == [
        str(CODEGEN_CACHE_ENTRIES)]
    assert re.findall(r"spark\.kafka\.consumer\.cache\.capacity=(\d+)", text) == [
        str(KAFKA_CONSUMER_CACHE)]


def test_service_image_healthcheck_gets_healthz_on_the_served_port(tmp_path: Path) -> None:
    """The HEALTHCHECK runs as written against a real service: healthy while it serves,
    unhealthy once it is gone (the slim image has no curl: the check is the stdlib)."""
    dockerfile = DOCKERFILES["flatavro"]
    argv = healthcheck_command(dockerfile)
    assert "/healthz" in argv[-1] and "curl" not in argv
    port = re.search(r"FLATAVRO_PORT=(\d+)", only(dockerfile, "ENV"))
    assert port and only(dockerfile, "EXPOSE") == port.group(1)
    settings = Settings(registry_db_path=str(tmp_path / "r.sqlite"), log_level="WARNING")
    app = ServedApp(create_app(settings), health_path="/healthz", lifespan="on").start()
    served = str(app.port)
    try:
        assert check_exit(argv, FLATAVRO_PORT=served) == 0
    finally:
        app.stop()
    assert check_exit(argv, FLATAVRO_PORT=served) == 1


def test_compose_waits_for_healthy_dependencies() -> None:
    services = compose()["services"]
    for name, service in services.items():
        needs = service.get("depends_on", {})
        assert isinstance(needs, dict), f"{name}: depends_on needs conditions"
        for dependency, condition in needs.items():
            assert condition == {"condition": "service_healthy"}, f"{name} -> {dependency}"
            other = services[dependency]
            image_check = ("build" in other and every(
                DOCKERFILES[COMPOSE_IMAGES[dependency]], "HEALTHCHECK"))
            assert "healthcheck" in other or image_check, f"{dependency} has no healthcheck"
    long_running = {"kafka", "schema-registry", "flatavro", "bridge", "stream"}
    assert long_running <= {n for n in services
                            if "healthcheck" in services[n] or n == "flatavro"}


def compose_check_url(service: dict[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"] and "urllib.request.urlopen" in test[3]
    url = re.search(r"'(http://127\.0\.0\.1:\d+/\w+)'", test[3])
    assert url, test
    return url.group(1)


def test_compose_bridge_runs_a_command_the_cli_takes_checked_on_its_liveness_port() -> None:
    service = compose()["services"]["bridge"]
    argv = shlex.split(service["command"])
    assert argv[0] == "flatavro"
    args = build_parser().parse_args(argv[1:])
    assert args.command == "bridge" and args.instance_id  # stable across restarts
    url = compose_check_url(service)
    assert url == f"http://127.0.0.1:{args.metrics_port}/healthz"
    assert service["ports"] == [f"{args.metrics_port}:{args.metrics_port}"]
    # The check as written, against the bridge's real metrics server and its liveness answer.
    port, alive = free_port(), Liveness(alive=True, reason="advancing")
    BridgeMetrics().serve(port, liveness=lambda: alive)
    check = service["healthcheck"]["test"][1:]
    check[-1] = check[-1].replace(f":{args.metrics_port}/", f":{port}/")
    assert check_exit(check) == 0
    alive = Liveness(alive=False, reason="stuck in producer.commit_transaction")
    assert check_exit(check) == 1


def test_compose_stream_serves_metrics_where_its_healthcheck_looks() -> None:
    dockerfile = DOCKERFILES["spark"]
    service = compose()["services"]["stream"]
    command = shlex.split(service["command"])
    assert command[0] == "spark-submit" and "--py-files" not in command
    script = next(i for i, token in enumerate(command) if token.endswith(".py"))
    inside = PurePosixPath(command[script]).relative_to(only(dockerfile, "WORKDIR"))
    assert inside == PurePosixPath("spark_jobs/stream.py") and (ROOT / inside).is_file()
    config = parse_stream_args(command[script + 1:])
    assert config.metrics_host == "0.0.0.0"  # reachable through the published port
    assert compose_check_url(service) == f"http://127.0.0.1:{config.metrics_port}/metrics"
    assert service["ports"] == [f"{config.metrics_port}:{config.metrics_port}"]
    lake = owned_volume(dockerfile)
    for path in (config.table_path, config.checkpoint):
        assert PurePosixPath(path).is_relative_to(lake)
    assert [m for m in service["volumes"] if m.split(":")[1] == lake]
