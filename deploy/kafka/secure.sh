# The secured broker profile of deploy/kafka/kafka.sh (sourced, not run): a SASL_SSL listener
# with SCRAM-SHA-512 on 127.0.0.1:KAFKA_SASL_SSL_PORT for the user KAFKA_SCRAM_USER (password
# KAFKA_SCRAM_PASSWORD). The PLAINTEXT listener stays (between the broker and its controller,
# and for a test's own set-up); clients under test use the SASL_SSL port only.
#
# At the first start a private CA and the broker's key pair are made with openssl (the
# certificate names 127.0.0.1 and localhost, so clients verify the host name), the broker's
# PKCS12 keystore with keytool: all under DATA_DIR/tls, kept for later starts. Clients trust
# DATA_DIR/tls/ca.pem (librdkafka: ssl.ca.location; Java: a PEM truststore). The user is made
# by kafka-storage format --add-scram (KRaft keeps SCRAM credentials in its metadata log).

# secure_profile DATA_DIR PORT CONTROLLER_PORT: the TLS files, the listener lines appended to
# DATA_DIR/server.properties, and the format arguments in the array `format_args`.
secure_profile() {
    local data=$1 port=$2 controller=$3
    local ssl_port=${KAFKA_SASL_SSL_PORT:?KAFKA_SASL_SSL_PORT missing}
    local user=${KAFKA_SCRAM_USER:?KAFKA_SCRAM_USER missing}
    local password=${KAFKA_SCRAM_PASSWORD:?KAFKA_SCRAM_PASSWORD missing}
    if [[ -n "${KAFKA_SASL_PORT:-}" ]]; then
        echo "kafka.sh: KAFKA_SASL_PORT and KAFKA_SASL_SSL_PORT are two profiles: set one" >&2
        exit 2
    fi
    _secure_tls "$data/tls"
    cat >> "$data/server.properties" <<EOF
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller,SASL_SSL://127.0.0.1:$ssl_port
advertised.listeners=PLAINTEXT://127.0.0.1:$port,SASL_SSL://127.0.0.1:$ssl_port
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;
ssl.keystore.type=PKCS12
ssl.keystore.location=$data/tls/broker.p12
ssl.keystore.password=$(cat "$data/tls/keystore.password")
ssl.client.auth=none
EOF
    # Only read by the first format (later starts keep the metadata log's users).
    format_args=(--add-scram "SCRAM-SHA-512=[name=$user,password=$password]")
}

# _secure_tls DIR: ca.pem (the CA clients trust) and broker.p12 (the broker's keystore, its
# password in keystore.password), made once.
_secure_tls() {
    local dir=$1
    [[ -f "$dir/broker.p12" ]] && return 0
    mkdir -p "$dir"
    (
        cd "$dir"
        umask 077
        openssl rand -hex 16 > keystore.password
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=flatavro test CA" \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" \
            -keyout broker.key -out broker.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > broker.ext
        openssl x509 -req -in broker.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 3650 \
            -extfile broker.ext -out broker.pem 2>/dev/null
        openssl pkcs12 -export -name broker -in broker.pem -inkey broker.key \
            -certfile ca.pem -passout "file:keystore.password" -out broker.tmp.p12
        # keytool rewrites it as Java's own PKCS12 (and fails here, not in the broker, if
        # Java cannot read it).
        keytool -importkeystore -noprompt -srckeystore broker.tmp.p12 -srcstoretype PKCS12 \
            -srcstorepass:file keystore.password -destkeystore broker.p12 \
            -deststoretype PKCS12 -deststorepass:file keystore.password >/dev/null 2>&1
        rm -f broker.tmp.p12 broker.csr broker.ext ca.srl
        chmod 644 ca.pem
    )
}
