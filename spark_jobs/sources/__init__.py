"""Where messages come from: the Kafka topic (or a Parquet dump of it), the broker's check
before Spark reads, and the file operations on local paths and Hadoop's file systems."""
