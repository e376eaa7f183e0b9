"""Batch encode/decode of rows against a registry's schemas (Confluent wire format)."""
