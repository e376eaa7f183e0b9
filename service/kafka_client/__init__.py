"""What every Kafka client of flatavro shares, the bridge's (librdkafka) and the Spark jobs'
(Spark's Kafka source): the client settings of ``FLATAVRO_KAFKA_*`` variables and a
``--kafka-config`` file, their redaction, and the TLS probe that names a TLS listener reached
without TLS."""
