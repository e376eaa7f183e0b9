"""Shared test support (no fixtures: importable from any test module)."""
