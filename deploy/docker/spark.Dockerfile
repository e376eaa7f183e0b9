# The Spark jobs' image: the bulk read and the stream of deploy/compose.yaml, and the stream's
# submitter, driver and executors on Kubernetes (deploy/helm/flatavro: spark-submit in cluster
# mode; spark-entrypoint.sh answers Spark's `driver` / `executor` pod commands). Build from the
# repository root:
#   docker build -f deploy/docker/spark.Dockerfile -t flatavro-spark .
# Not apache/spark:4.0.0-python3: its Python is Ubuntu 22.04's 3.10 (the package needs 3.11)
# and it lacks httpx and pydantic-settings, which the job's schema resolution uses (the
# service's registry client and settings). Here: Python 3.11, Java 17 and
# the package with its `spark` extra (pyspark 4.0.0 brings spark-submit). spark-avro and
# spark-sql-kafka come at submit time through --packages.
FROM python:3.11-slim-bookworm
# Debian's slim images drop man1, where openjdk's post-install script links its man pages.
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless tini \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/flatavro
COPY pyproject.toml README.md ./
COPY service ./service
COPY spark_jobs ./spark_jobs
RUN pip install --no-cache-dir '.[spark,aws]' \
    && useradd --system --create-home spark \
    && mkdir /lake && chown spark:spark /lake
COPY deploy/docker/spark-entrypoint.sh /opt/flatavro/
# pyspark's own Spark (bin/spark-submit, jars/) is the SPARK_HOME of the pods' commands.
ENV SPARK_HOME=/usr/local/lib/python3.11/site-packages/pyspark PYSPARK_PYTHON=python3
RUN test -x "$SPARK_HOME/bin/spark-submit" && ls "$SPARK_HOME"/jars/spark-kubernetes_*.jar
USER spark
VOLUME /lake
ENTRYPOINT ["/opt/flatavro/spark-entrypoint.sh"]
