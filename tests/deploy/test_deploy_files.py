"""The deploy files work as written: every path they name is in the repository (or built by
a documented make target), the images get what they run, the job accepts their arguments.

No Docker engine here, so the files are read, not run: the checks are what running them
would hit first (a COPY of a missing or docker-ignored path, a script not in the image, a
volume not declared, an argument the job refuses).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from spark_jobs.config import parse_args, parse_stream_args
from tests.support.deploy import ROOT, make_env

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


def test_compose_builds_from_the_repository() -> None:
    for name, service in compose()["services"].items():
        if "build" in service:
            context = (DEPLOY / service["build"]["context"]).resolve()
            assert context == ROOT, name
            assert context / service["build"]["dockerfile"] == DOCKERFILES[name]


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
    install = "pip install --no-cache-dir '.[spark]'"
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
