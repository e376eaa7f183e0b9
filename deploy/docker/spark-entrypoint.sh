#!/bin/bash
# The entrypoint of deploy/docker/spark.Dockerfile's image. Spark on Kubernetes (spark-submit
# --master k8s://... --deploy-mode cluster, deploy/helm/flatavro) starts its driver pod with the
# arguments `driver --properties-file ... --class ...` and its executor pods with `executor`
# and SPARK_* variables: the contract of Spark's own images (apache/spark), which this follows
# for a pip-installed pyspark ($SPARK_HOME). Any other command (spark-submit ..., compose's
# command) runs as given.
set -eo pipefail
case "${1:-}" in
driver)
    shift
    exec /usr/bin/tini -s -- "$SPARK_HOME/bin/spark-submit" \
        --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
        --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
        --deploy-mode client "$@"
    ;;
executor)
    shift
    java_opts=()
    for name in "${!SPARK_JAVA_OPT_@}"; do java_opts+=("${!name}"); done
    exec /usr/bin/tini -s -- java "${java_opts[@]}" \
        -Xms"$SPARK_EXECUTOR_MEMORY" -Xmx"$SPARK_EXECUTOR_MEMORY" \
        -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*:$PWD" \
        org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
        --driver-url "$SPARK_DRIVER_URL" --executor-id "$SPARK_EXECUTOR_ID" \
        --cores "$SPARK_EXECUTOR_CORES" --app-id "$SPARK_APPLICATION_ID" \
        --hostname "$SPARK_EXECUTOR_POD_IP" --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
        --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
*)
    exec "$@"
    ;;
esac
