"""Benchmarks: each prints its ratio against the raw library doing the same work in one run."""
