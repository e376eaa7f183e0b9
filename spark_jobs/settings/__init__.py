"""What a job is told: its options from argv, the Kafka client settings mapped to Spark's
``kafka.`` options, S3A's settings from the AWS environment."""
