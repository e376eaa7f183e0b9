"""Spark jobs that bulk-read flat-avro topics with Spark's built-in ``from_avro``."""
