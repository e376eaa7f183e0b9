"""From Kafka records to rows: the schemas a job decodes with (resolved from the registry on
the driver), Confluent frames and ``from_avro`` per writer id, bad messages (failfast,
permissive, dead letters)."""
