"""The Helm chart (deploy/helm/flatavro): `helm lint`, and `helm template`'s manifests read
back: the probes and their ports, the Secret behind every secret variable, the embedded
registry's volume and its one-replica rule (refused otherwise), the bridge's instance id from
the pod ordinal, the stream's spark-submit in cluster mode on object storage. Arguments are
parsed by the real command-line parsers, so a flag the chart passes and the program lacks
fails here. helm is the one deploy/helm/build.sh builds (`make setup`); no cluster is used.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pyspark
import pytest
import yaml

from service.bridge.kafka_settings import kafka_settings
from service.cli.main import build_parser
from spark_jobs.settings.config import parse_stream_args
from tests.support.deploy import ROOT
from tests.support.parts import not_in_fast_tier

CHART = ROOT / "deploy" / "helm" / "flatavro"
HELM = Path(os.environ.get("FLATAVRO_HELM_CACHE", ROOT / ".cache" / "helm")) / "bin" / "helm"
SPARK_DOCKERFILE = ROOT / "deploy" / "docker" / "spark.Dockerfile"
SECRETS = {"secret.apiKeys": "key-one,key-two", "secret.registryBearerToken": "key-one",
           "secret.kafkaSaslPassword": "kafka-pw-7", "secret.awsAccessKeyId": "AKIA-TEST",
           "secret.awsSecretAccessKey": "aws-secret-9"}
EVERYTHING = {"bridge.enabled": "true", "bridge.sourceTopic": "ticdc-shop",
              "bridge.replicas": "3", "stream.enabled": "true",
              "stream.topic": "tidb_shop_orders", "stream.tablePath": "s3a://lake/orders",
              "stream.checkpoint": "s3a://lake/_checkpoints/orders",
              "stream.s3.endpoint": "http://minio:9000",
              "kafka.settings.security\\.protocol": "SASL_SSL",
              "kafka.settings.sasl\\.username": "bridge", **SECRETS}

Manifests = dict[tuple[str, str], dict[str, Any]]


def helm(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    not_in_fast_tier("helm", "helm")
    assert HELM.is_file(), f"{HELM} is missing: run `make setup` (deploy/helm/build.sh)"
    home = tmp_path / "helm-home"  # helm's config and cache stay out of $HOME
    env = dict(os.environ, HELM_CACHE_HOME=str(home / "cache"),
               HELM_CONFIG_HOME=str(home / "config"), HELM_DATA_HOME=str(home / "data"))
    return subprocess.run([str(HELM), *args], capture_output=True, text=True, env=env,
                          timeout=60, check=False)


def sets(values: dict[str, str]) -> list[str]:
    """--set arguments; a comma inside a value is escaped (helm splits on it), a {list} not."""
    return [arg for name, value in values.items() for arg in (
        "--set", f"{name}={value if value.startswith('{') else value.replace(',', chr(92) + ',')}")]


def render(tmp_path: Path, values: dict[str, str] | None = None) -> Manifests:
    done = helm(tmp_path, "template", "rel", str(CHART), "--namespace", "lake",
                *sets(values or {}))
    assert done.returncode == 0, done.stderr
    documents = [d for d in yaml.safe_load_all(done.stdout) if d]
    manifests = {(d["kind"], d["metadata"]["name"]): d for d in documents}
    assert len(manifests) == len(documents)  # no two objects share a kind and name
    return manifests


def refusal(tmp_path: Path, values: dict[str, str]) -> str:
    """The chart's one-line message (helm prints it after "Error: execution error at
    (<template>): ", then its own hint about --debug)."""
    done = helm(tmp_path, "template", "rel", str(CHART), *sets(values))
    assert done.returncode != 0, done.stdout
    first = done.stderr.splitlines()[0]
    assert first.startswith("Error: execution error at (flatavro/templates/"), done.stderr
    return first.split("): ", 1)[1]


def container(workload: dict[str, Any]) -> dict[str, Any]:
    containers = workload["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    return containers[0]


def env(workload: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["name"]: e for e in container(workload).get("env", [])}


def port(workload: dict[str, Any], name: str) -> int:
    return next(p["containerPort"] for p in container(workload)["ports"] if p["name"] == name)


def secret_data(manifests: Manifests) -> dict[str, str]:
    (secret,) = [m for (kind, _), m in manifests.items() if kind == "Secret"]
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_lint_passes_with_the_defaults_and_with_every_part_on(tmp_path: Path) -> None:
    for values in ({}, EVERYTHING | {"registry.url": "http://registry:8081"}):
        done = helm(tmp_path, "lint", "--strict", str(CHART), *sets(values))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 chart(s) linted, 0 chart(s) failed" in done.stdout


def test_service_probes_are_the_apps_health_routes_on_its_port(tmp_path: Path) -> None:
    deployment = render(tmp_path)[("Deployment", "rel-flatavro")]
    served = json.loads((ROOT / "openapi" / "openapi.json").read_text(encoding="utf-8"))
    variables = env(deployment)
    http = port(deployment, "http")
    assert int(variables["FLATAVRO_PORT"]["value"]) == http
    assert variables["FLATAVRO_HOST"]["value"] == "0.0.0.0"
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        get = container(deployment)[probe]["httpGet"]
        assert (get["path"], get["port"]) == (path, "http")
        assert path in served["paths"]
    resources = container(deployment)["resources"]
    assert resources["requests"]["cpu"] and resources["limits"]["memory"]
    assert container(deployment)["args"] == ["flatavro", "serve"]


def test_secret_values_reach_the_pods_only_through_the_secret(tmp_path: Path) -> None:
    manifests = render(tmp_path, EVERYTHING)
    data = secret_data(manifests)
    assert data == {"FLATAVRO_API_KEYS": "key-one,key-two",
                    "FLATAVRO_REGISTRY_BEARER_TOKEN": "key-one",
                    "FLATAVRO_KAFKA_SASL_PASSWORD": "kafka-pw-7",
                    "AWS_ACCESS_KEY_ID": "AKIA-TEST", "AWS_SECRET_ACCESS_KEY": "aws-secret-9"}
    service = env(manifests[("Deployment", "rel-flatavro")])
    bridge = env(manifests[("StatefulSet", "rel-flatavro-bridge")])
    assert service["FLATAVRO_API_KEYS"]["valueFrom"]["secretKeyRef"] == {
        "name": "rel-flatavro", "key": "FLATAVRO_API_KEYS"}
    for name in ("FLATAVRO_REGISTRY_BEARER_TOKEN", "FLATAVRO_KAFKA_SASL_PASSWORD"):
        assert bridge[name]["valueFrom"]["secretKeyRef"] == {"name": "rel-flatavro",
                                                              "key": name}
    assert "FLATAVRO_API_KEYS" not in bridge  # the bridge sends a key, it checks none
    rendered = "\n".join(yaml.safe_dump(m) for (kind, _), m in manifests.items()
                         if kind != "Secret")
    for value in SECRETS.values():
        assert value not in rendered, value  # not in an argument, a --conf or an env value


def test_an_existing_secret_is_referenced_by_its_listed_keys(tmp_path: Path) -> None:
    manifests = render(tmp_path, {"secret.create": "false", "secret.existingSecret": "ops",
                                  "secret.existingSecretKeys": "{FLATAVRO_API_KEYS}"})
    assert not [kind for kind, _ in manifests if kind == "Secret"]
    variables = env(manifests[("Deployment", "rel-flatavro")])
    assert variables["FLATAVRO_API_KEYS"]["valueFrom"]["secretKeyRef"]["name"] == "ops"
    assert "FLATAVRO_REGISTRY_PASSWORD" not in variables
    assert "secret.existingSecret" in refusal(tmp_path, {"secret.create": "false"})


def test_the_embedded_registry_gets_a_volume_and_one_pod_at_a_time(tmp_path: Path) -> None:
    manifests = render(tmp_path)
    deployment = manifests[("Deployment", "rel-flatavro")]
    claim = manifests[("PersistentVolumeClaim", "rel-flatavro-registry")]
    spec = deployment["spec"]
    assert spec["replicas"] == 1 and spec["strategy"]["type"] == "Recreate"
    (volume,) = spec["template"]["spec"]["volumes"]
    assert volume["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    (mount,) = container(deployment)["volumeMounts"]
    db_path = PurePosixPath(env(deployment)["FLATAVRO_REGISTRY_DB_PATH"]["value"])
    assert mount["name"] == volume["name"] and PurePosixPath(mount["mountPath"]) == db_path.parent
    assert "FLATAVRO_REGISTRY_URL" not in env(deployment)
    # The image's user (deploy/docker/Dockerfile) may write the volume.
    dockerfile = (ROOT / "deploy" / "docker" / "Dockerfile").read_text(encoding="utf-8")
    uid = re.search(r"useradd --system --uid (\d+) --gid flatavro", dockerfile)
    gid = re.search(r"groupadd --system --gid (\d+) flatavro", dockerfile)
    assert uid and gid
    security = spec["template"]["spec"]["securityContext"]
    assert (security["runAsUser"], security["fsGroup"]) == (int(uid[1]), int(gid[1]))


def test_an_external_registry_allows_replicas_and_needs_no_volume(tmp_path: Path) -> None:
    manifests = render(tmp_path, {"service.replicas": "3",
                                  "registry.url": "https://registry.example:8081",
                                  "registry.username": "svc",
                                  "secret.registryPassword": "reg-pw"})
    deployment = manifests[("Deployment", "rel-flatavro")]
    assert deployment["spec"]["replicas"] == 3 and "strategy" not in deployment["spec"]
    assert not [kind for kind, _ in manifests if kind == "PersistentVolumeClaim"]
    assert "volumes" not in deployment["spec"]["template"]["spec"]
    variables = env(deployment)
    assert variables["FLATAVRO_REGISTRY_URL"]["value"] == "https://registry.example:8081"
    assert variables["FLATAVRO_REGISTRY_USERNAME"]["value"] == "svc"
    assert variables["FLATAVRO_REGISTRY_PASSWORD"]["valueFrom"]["secretKeyRef"]["key"] == (
        "FLATAVRO_REGISTRY_PASSWORD")


def test_replicas_with_the_embedded_registry_are_refused_naming_the_values(
        tmp_path: Path) -> None:
    message = refusal(tmp_path, {"service.replicas": "2"})
    assert "service.replicas=2 needs an external registry" in message
    assert message.endswith(
        "set registry.url to a Confluent-compatible registry, or service.replicas=1")


@pytest.mark.parametrize(("values", "named"), [
    ({"bridge.enabled": "true"}, "bridge.enabled=true needs bridge.sourceTopic"),
    ({"stream.enabled": "true", "stream.tablePath": "s3a://l/t", "stream.checkpoint": "s3a://l/c"},
     "stream.enabled=true needs stream.topic"),
    ({"stream.enabled": "true", "stream.topic": "t", "stream.tablePath": "/lake/t",
      "stream.checkpoint": "s3a://l/c"}, 'stream.tablePath="/lake/t": the stream\'s table'),
    ({"service.enabled": "false", "bridge.enabled": "true", "bridge.sourceTopic": "t"},
     "the bridge and the stream need a schema registry: set registry.url"),
    ({"bridge.enabled": "true", "bridge.sourceTopic": "t", "secret.apiKeys": "k"},
     "bridge.register=true writes schemas to the embedded registry, whose writes need one of "
     "secret.apiKeys: set secret.registryBearerToken"),
], ids=["bridge-topic", "stream-topic", "stream-local-path", "no-registry", "bridge-key"])
def test_parts_without_what_they_need_are_refused(tmp_path: Path, values: dict[str, str],
                                                   named: str) -> None:
    assert refusal(tmp_path, values).startswith(named)


def test_the_bridge_pod_ordinal_is_its_instance_id(tmp_path: Path) -> None:
    manifests = render(tmp_path, EVERYTHING)
    bridge = manifests[("StatefulSet", "rel-flatavro-bridge")]
    headless = manifests[("Service", bridge["spec"]["serviceName"])]
    assert bridge["spec"]["replicas"] == 3 and headless["spec"]["clusterIP"] == "None"
    variables = env(bridge)
    ordinal = variables["BRIDGE_ORDINAL"]["valueFrom"]["fieldRef"]["fieldPath"]
    assert ordinal == "metadata.labels['apps.kubernetes.io/pod-index']"
    argv = container(bridge)["args"]
    assert argv[:2] == ["flatavro", "bridge"]
    # Kubernetes expands $(BRIDGE_ORDINAL) in args from the container's env.
    args = build_parser().parse_args(
        [a.replace("$(BRIDGE_ORDINAL)", "2") for a in argv[1:]])
    assert args.instance_id == "2"
    assert args.registry_url == "http://rel-flatavro:8080/registry"  # the embedded registry
    assert args.group_id == "flatavro-bridge.ticdc-shop" and args.register
    metrics = port(bridge, "metrics")
    assert args.metrics_port == metrics
    assert [p["targetPort"] for p in headless["spec"]["ports"]] == ["metrics"]
    liveness = container(bridge)["livenessProbe"]["httpGet"]
    assert (liveness["path"], liveness["port"]) == ("/healthz", "metrics")
    # SIGTERM ends the bridge within --broker-timeout + 10 s: Kubernetes waits longer.
    grace = bridge["spec"]["template"]["spec"]["terminationGracePeriodSeconds"]
    assert grace > args.broker_timeout + 10
    kafka = {name: e["value"] for name, e in variables.items() if "value" in e}
    assert kafka_settings(kafka, None) == {"security.protocol": "SASL_SSL",
                                           "sasl.username": "bridge"}


def spark_submit(argv: list[str]) -> tuple[dict[str, list[str]], str, list[str]]:
    """spark-submit's --options (by name, in order), its main resource and the job's argv."""
    assert argv[0] == "spark-submit"
    options: dict[str, list[str]] = {}
    for index, arg in enumerate(argv[1:], start=1):
        if not arg.startswith("--"):
            return options, arg, argv[index + 1:]
        name, _, value = arg.partition("=")
        options.setdefault(name, []).append(value)
    raise AssertionError(f"no main resource in {argv}")


def test_the_stream_is_a_cluster_mode_spark_submit_on_object_storage(tmp_path: Path) -> None:
    manifests = render(tmp_path, EVERYTHING)
    job = manifests[("Job", "rel-flatavro-stream")]
    options, main, job_argv = spark_submit(container(job)["args"])
    assert options["--deploy-mode"] == ["cluster"]
    assert options["--master"][0].startswith("k8s://")
    conf = dict(c.split("=", 1) for c in options["--conf"])
    assert conf["spark.kubernetes.namespace"] == "lake"
    assert conf["spark.kubernetes.container.image"] == container(job)["image"]

    # The job's file is where the Spark image puts it; its arguments parse.
    assert main.startswith("local://")
    workdir = re.search(r"^WORKDIR (\S+)", SPARK_DOCKERFILE.read_text(encoding="utf-8"), re.M)
    assert workdir
    inside = PurePosixPath(main.removeprefix("local://")).relative_to(workdir[1])
    assert (ROOT / inside).is_file() and inside.parts[0] == "spark_jobs"
    config = parse_stream_args(job_argv)
    assert config.table_path == "s3a://lake/orders"
    assert config.checkpoint == "s3a://lake/_checkpoints/orders"
    assert config.registry_url == "http://rel-flatavro:8080/registry"
    assert (config.metrics_host, config.trigger.available_now) == ("0.0.0.0", False)

    # The driver's metrics Service selects the labels spark-submit puts on the driver pod.
    metrics = manifests[("Service", "rel-flatavro-stream-metrics")]
    labels = {name.removeprefix("spark.kubernetes.driver.label."): value
              for name, value in conf.items() if name.startswith("spark.kubernetes.driver.label.")}
    assert metrics["spec"]["selector"].items() <= labels.items()
    assert [p["targetPort"] for p in metrics["spec"]["ports"]] == [config.metrics_port]

    # Secrets come from the Secret, into the driver (and S3's into the executors).
    secret = secret_data(manifests)
    refs = {name: value for name, value in conf.items() if ".secretKeyRef." in name}
    for name in ("FLATAVRO_REGISTRY_BEARER_TOKEN", "FLATAVRO_KAFKA_SASL_PASSWORD",
                 "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert refs[f"spark.kubernetes.driver.secretKeyRef.{name}"] == f"rel-flatavro:{name}"
        assert name in secret
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert refs[f"spark.kubernetes.executor.secretKeyRef.{name}"] == f"rel-flatavro:{name}"
    assert conf["spark.kubernetes.driverEnv.AWS_ENDPOINT_URL_S3"] == "http://minio:9000"
    assert conf["spark.kubernetes.driverEnv.FLATAVRO_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"

    # The account that submits is the driver's, and may create pods.
    account = job["spec"]["template"]["spec"]["serviceAccountName"]
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == account
    binding = manifests[("RoleBinding", account)]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account,
                                    "namespace": "lake"}]
    rules = manifests[("Role", binding["roleRef"]["name"])]["rules"]
    assert [r for r in rules if "pods" in r["resources"] and "create" in r["verbs"]]


def test_the_streams_packages_match_the_jars_the_tests_use(tmp_path: Path) -> None:
    job = render(tmp_path, EVERYTHING)[("Job", "rel-flatavro-stream")]
    options, _, _ = spark_submit(container(job)["args"])
    packages = dict(p.rsplit(":", 1) for p in options["--packages"][0].split(","))
    spark_pom = (ROOT / "deploy" / "jvm" / "spark-pom.xml").read_text(encoding="utf-8")
    s3_pom = (ROOT / "deploy" / "jvm" / "s3-pom.xml").read_text(encoding="utf-8")
    delta = re.search(r"<delta.version>(.+?)</delta.version>", spark_pom)
    hadoop = re.search(r"<hadoop.version>(.+?)</hadoop.version>", s3_pom)
    assert delta and hadoop
    assert packages == {
        "org.apache.spark:spark-avro_2.13": pyspark.__version__,
        "org.apache.spark:spark-sql-kafka-0-10_2.13": pyspark.__version__,
        "io.delta:delta-spark_2.13": delta[1],
        "org.apache.hadoop:hadoop-aws": hadoop[1]}


def test_the_spark_image_answers_sparks_pod_commands() -> None:
    """Spark on Kubernetes starts its pods with `driver ...` / `executor`: the image's
    entrypoint turns them into the driver's spark-submit and the executor's backend."""
    text = SPARK_DOCKERFILE.read_text(encoding="utf-8")
    entrypoint = re.search(r'^ENTRYPOINT \["([^"]+)"\]', text, re.M)
    assert entrypoint
    script = ROOT / "deploy" / "docker" / PurePosixPath(entrypoint[1]).name
    assert f"COPY deploy/docker/{script.name} " in text and os.access(script, os.X_OK)
    assert "tini" in text  # the entrypoint execs the pods' processes under tini
    body = script.read_text(encoding="utf-8")
    assert "--deploy-mode client" in body
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in body
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    # Any other command runs as given (compose's spark-submit, the chart's submitter).
    done = subprocess.run([str(script), "sh", "-c", "echo $0 passed", "through"],
                          capture_output=True, text=True, check=True)
    assert done.stdout == "through passed\n"
    # The image's SPARK_HOME is pyspark's, whose jars hold Spark's Kubernetes backend.
    home = re.search(r"SPARK_HOME=(\S+)", text)
    assert home and PurePosixPath(home[1]).name == "pyspark"
    jars = Path(pyspark.__file__).parent / "jars"
    assert list(jars.glob("spark-kubernetes_*.jar"))
